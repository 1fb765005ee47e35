// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The rdma-core → seam value mappings: every value VerbsSeam maps, and the
// values it must not act on arriving as kOther.
#include <arpa/inet.h>

#include <cstring>
#include <set>
#include <utility>
#include <vector>
#include "catch2_compat.hpp"

#include "rdma/verbs_map.hpp"

namespace rdma_verbs_map_test {
using namespace rcnet;
using namespace rcnet::rdma;

TEST_CASE("rdma_cm event types map one-to-one; the rest are OTHER", "[rdma][map]") {
  const std::vector<std::pair<rdma_cm_event_type, CmEventType>> table = {
      {RDMA_CM_EVENT_ADDR_RESOLVED, CmEventType::kAddrResolved},
      {RDMA_CM_EVENT_ADDR_ERROR, CmEventType::kAddrError},
      {RDMA_CM_EVENT_ROUTE_RESOLVED, CmEventType::kRouteResolved},
      {RDMA_CM_EVENT_ROUTE_ERROR, CmEventType::kRouteError},
      {RDMA_CM_EVENT_CONNECT_REQUEST, CmEventType::kConnectRequest},
      {RDMA_CM_EVENT_CONNECT_ERROR, CmEventType::kConnectError},
      {RDMA_CM_EVENT_UNREACHABLE, CmEventType::kUnreachable},
      {RDMA_CM_EVENT_REJECTED, CmEventType::kRejected},
      {RDMA_CM_EVENT_ESTABLISHED, CmEventType::kEstablished},
      {RDMA_CM_EVENT_DISCONNECTED, CmEventType::kDisconnected},
      {RDMA_CM_EVENT_DEVICE_REMOVAL, CmEventType::kDeviceRemoval},
      {RDMA_CM_EVENT_TIMEWAIT_EXIT, CmEventType::kTimewaitExit},
      {RDMA_CM_EVENT_ADDR_CHANGE, CmEventType::kAddrChange},
  };
  std::set<CmEventType> seen;
  for (const auto& [raw, want] : table) {
    INFO(rdma_event_str(raw));
    CHECK(map_cm_event(raw) == want);
    CHECK(to_string(map_cm_event(raw)) != "OTHER");
    seen.insert(map_cm_event(raw));
  }
  CHECK(seen.size() == table.size());
  CHECK(map_cm_event(RDMA_CM_EVENT_CONNECT_RESPONSE) == CmEventType::kOther);
  CHECK(map_cm_event(RDMA_CM_EVENT_MULTICAST_JOIN) == CmEventType::kOther);
  CHECK(map_cm_event(RDMA_CM_EVENT_MULTICAST_ERROR) == CmEventType::kOther);
  // Values past the last enumerator are not representable in rdma_cm_event_type
  // (UBSan: invalid enum load); the enumerators above are the unmapped ones.
  CHECK(map_cm_event(RDMA_CM_EVENT_TIMEWAIT_EXIT) == CmEventType::kTimewaitExit);
}

TEST_CASE("async event types map one-to-one; the rest are OTHER", "[rdma][map]") {
  const std::vector<std::pair<ibv_event_type, AsyncEventType>> table = {
      {IBV_EVENT_QP_FATAL, AsyncEventType::kQpFatal},
      {IBV_EVENT_QP_REQ_ERR, AsyncEventType::kQpReqErr},
      {IBV_EVENT_QP_ACCESS_ERR, AsyncEventType::kQpAccessErr},
      {IBV_EVENT_COMM_EST, AsyncEventType::kCommEstablished},
      {IBV_EVENT_SQ_DRAINED, AsyncEventType::kSqDrained},
      {IBV_EVENT_PATH_MIG, AsyncEventType::kPathMigrated},
      {IBV_EVENT_QP_LAST_WQE_REACHED, AsyncEventType::kLastWqeReached},
      {IBV_EVENT_SRQ_LIMIT_REACHED, AsyncEventType::kSrqLimitReached},
      {IBV_EVENT_SRQ_ERR, AsyncEventType::kSrqErr},
      {IBV_EVENT_CQ_ERR, AsyncEventType::kCqErr},
      {IBV_EVENT_PORT_ACTIVE, AsyncEventType::kPortActive},
      {IBV_EVENT_PORT_ERR, AsyncEventType::kPortError},
      {IBV_EVENT_DEVICE_FATAL, AsyncEventType::kDeviceFatal},
  };
  std::set<AsyncEventType> seen;
  for (const auto& [raw, want] : table) {
    INFO(ibv_event_type_str(raw));
    CHECK(map_async_event(raw) == want);
    seen.insert(map_async_event(raw));
  }
  CHECK(seen.size() == table.size());
  for (auto raw : {IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE,
                   IBV_EVENT_SM_CHANGE, IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE,
                   IBV_EVENT_WQ_FATAL, static_cast<ibv_event_type>(31)}) {
    INFO(static_cast<int>(raw));
    CHECK(map_async_event(raw) == AsyncEventType::kOther);
  }
}

TEST_CASE("only QP-affiliated async events carry a QP element", "[rdma][map]") {
  // ibv_get_async_event(3): element.qp is valid only for these; reading it
  // for an SRQ or CQ event would misread the union.
  for (auto t : {IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,
                 IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED, IBV_EVENT_PATH_MIG,
                 IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_QP_LAST_WQE_REACHED}) {
    INFO(ibv_event_type_str(t));
    CHECK(is_qp_event(t));
  }
  for (auto t :
       {IBV_EVENT_CQ_ERR, IBV_EVENT_SRQ_ERR, IBV_EVENT_SRQ_LIMIT_REACHED, IBV_EVENT_PORT_ACTIVE,
        IBV_EVENT_PORT_ERR, IBV_EVENT_DEVICE_FATAL, IBV_EVENT_WQ_FATAL}) {
    INFO(ibv_event_type_str(t));
    CHECK_FALSE(is_qp_event(t));
  }
}

TEST_CASE("WC status and opcode mapping", "[rdma][map]") {
  const std::vector<std::pair<ibv_wc_status, WcStatus>> table = {
      {IBV_WC_SUCCESS, WcStatus::kSuccess},
      {IBV_WC_WR_FLUSH_ERR, WcStatus::kFlushErr},
      {IBV_WC_RETRY_EXC_ERR, WcStatus::kRetryExceeded},
      {IBV_WC_RNR_RETRY_EXC_ERR, WcStatus::kRnrRetryExceeded},
      {IBV_WC_REM_ACCESS_ERR, WcStatus::kRemoteAccessErr},
      {IBV_WC_REM_OP_ERR, WcStatus::kRemoteOpErr},
      {IBV_WC_LOC_LEN_ERR, WcStatus::kLocalLengthErr},
      {IBV_WC_LOC_PROT_ERR, WcStatus::kLocalProtErr},
  };
  std::set<WcStatus> seen;
  for (const auto& [raw, want] : table) {
    INFO(ibv_wc_status_str(raw));
    CHECK(map_wc_status(raw) == want);
    seen.insert(map_wc_status(raw));
  }
  CHECK(seen.size() == table.size());
  for (auto raw : {IBV_WC_LOC_QP_OP_ERR, IBV_WC_GENERAL_ERR, IBV_WC_FATAL_ERR, IBV_WC_REM_ABORT_ERR,
                   IBV_WC_BAD_RESP_ERR, static_cast<ibv_wc_status>(31)}) {
    INFO(static_cast<int>(raw));
    CHECK(map_wc_status(raw) == WcStatus::kOther);
  }

  CHECK(map_wc_opcode(IBV_WC_SEND) == WcOpcode::kSend);
  CHECK(map_wc_opcode(IBV_WC_RECV) == WcOpcode::kRecv);
  for (auto raw : {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD,
                   IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_LOCAL_INV}) {
    INFO(static_cast<int>(raw));
    CHECK(map_wc_opcode(raw) == WcOpcode::kOther);
  }
}

TEST_CASE("a successful receive with immediate is converted to host order", "[rdma][map]") {
  ibv_wc wc{};
  wc.wr_id = 0xdeadbeef12345678ull;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV;
  wc.byte_len = 1500;
  wc.qp_num = 0x11;
  wc.wc_flags = IBV_WC_WITH_IMM;
  wc.imm_data = htonl(0x01020304u);
  const auto out = to_work_completion(wc);
  CHECK(out.wr_id == 0xdeadbeef12345678ull);
  CHECK(out.status == WcStatus::kSuccess);
  CHECK(out.opcode == WcOpcode::kRecv);
  CHECK(out.byte_len == 1500);
  CHECK(out.qpn == 0x11);
  CHECK(out.has_imm);
  CHECK(out.imm == 0x01020304u);

  wc.wc_flags = 0;  // a SEND without immediate: imm_data is not meaningful
  const auto plain = to_work_completion(wc);
  CHECK_FALSE(plain.has_imm);
  CHECK(plain.imm == 0);
}

TEST_CASE("an error WC keeps only wr_id, status and QPN", "[rdma][map]") {
  // docs/lab.md: rxe reports flushed receives as opcode SEND with byte_len 0, so
  // nothing but wr_id may classify them.
  ibv_wc wc{};
  wc.wr_id = 42;
  wc.status = IBV_WC_WR_FLUSH_ERR;
  wc.opcode = IBV_WC_SEND;
  wc.byte_len = 77;
  wc.qp_num = 9;
  wc.wc_flags = IBV_WC_WITH_IMM;
  wc.imm_data = htonl(5);
  const auto out = to_work_completion(wc);
  CHECK(out.wr_id == 42);
  CHECK(out.status == WcStatus::kFlushErr);
  CHECK(out.qpn == 9);
  CHECK(out.opcode == WcOpcode::kOther);
  CHECK(out.byte_len == 0);
  CHECK_FALSE(out.has_imm);
  CHECK(describe_status(out) == "WR_FLUSH_ERR");
}

TEST_CASE("an error WC rcnet does not act on keeps the provider's status for the log",
          "[rdma][map]") {
  ibv_wc wc{};
  wc.status = IBV_WC_GENERAL_ERR;
  wc.vendor_err = 0x32;
  const auto out = to_work_completion(wc);
  CHECK(out.status == WcStatus::kOther);
  CHECK(out.raw_status == static_cast<std::uint32_t>(IBV_WC_GENERAL_ERR));
  CHECK(out.vendor_err == 0x32);
  CHECK(describe_status(out) == std::string("OTHER (ibv_wc_status ") +
                                    std::to_string(static_cast<int>(IBV_WC_GENERAL_ERR)) + ": " +
                                    ibv_wc_status_str(IBV_WC_GENERAL_ERR) + ", vendor_err 0x32)");
  // A status rcnet acts on says only its vendor_err beyond its name.
  wc.status = IBV_WC_RETRY_EXC_ERR;
  wc.vendor_err = 0x81;
  CHECK(describe_status(to_work_completion(wc)) == "RETRY_EXC_ERR (vendor_err 0x81)");
}

TEST_CASE("sockaddr to Endpoint keeps address and host-order port", "[rdma][map]") {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(7471);
  REQUIRE(inet_pton(AF_INET, "10.99.0.2", &sin.sin_addr) == 1);
  auto ep = endpoint_from_sockaddr(reinterpret_cast<sockaddr*>(&sin));
  REQUIRE(ep);
  CHECK(ep->to_string() == "10.99.0.2:7471");

  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(1);
  REQUIRE(inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr) == 1);
  auto ep6 = endpoint_from_sockaddr(reinterpret_cast<sockaddr*>(&sin6));
  REQUIRE(ep6);
  CHECK(ep6->to_string() == "[fe80::1]:1");

  sockaddr other{};
  other.sa_family = AF_UNIX;
  CHECK_FALSE(endpoint_from_sockaddr(&other));
  CHECK_FALSE(endpoint_from_sockaddr(nullptr));
}

}  // namespace rdma_verbs_map_test
