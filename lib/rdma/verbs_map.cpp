// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/verbs_map.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace rcnet::rdma {

CmEventType map_cm_event(rdma_cm_event_type t) {
  switch (t) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      return CmEventType::kAddrResolved;
    case RDMA_CM_EVENT_ADDR_ERROR:
      return CmEventType::kAddrError;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      return CmEventType::kRouteResolved;
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return CmEventType::kRouteError;
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      return CmEventType::kConnectRequest;
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return CmEventType::kConnectError;
    case RDMA_CM_EVENT_UNREACHABLE:
      return CmEventType::kUnreachable;
    case RDMA_CM_EVENT_REJECTED:
      return CmEventType::kRejected;
    case RDMA_CM_EVENT_ESTABLISHED:
      return CmEventType::kEstablished;
    case RDMA_CM_EVENT_DISCONNECTED:
      return CmEventType::kDisconnected;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return CmEventType::kDeviceRemoval;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return CmEventType::kTimewaitExit;
    case RDMA_CM_EVENT_ADDR_CHANGE:
      return CmEventType::kAddrChange;
    // CONNECT_RESPONSE only exists for ids without a QP (rdma_connect(3));
    // rcnet always connects with a QP. Multicast is not used.
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_MULTICAST_JOIN:
    case RDMA_CM_EVENT_MULTICAST_ERROR:
      break;
  }
  return CmEventType::kOther;
}

AsyncEventType map_async_event(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_QP_FATAL:
      return AsyncEventType::kQpFatal;
    case IBV_EVENT_QP_REQ_ERR:
      return AsyncEventType::kQpReqErr;
    case IBV_EVENT_QP_ACCESS_ERR:
      return AsyncEventType::kQpAccessErr;
    case IBV_EVENT_COMM_EST:
      return AsyncEventType::kCommEstablished;
    case IBV_EVENT_SQ_DRAINED:
      return AsyncEventType::kSqDrained;
    case IBV_EVENT_PATH_MIG:
      return AsyncEventType::kPathMigrated;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return AsyncEventType::kLastWqeReached;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return AsyncEventType::kSrqLimitReached;
    case IBV_EVENT_SRQ_ERR:
      return AsyncEventType::kSrqErr;
    case IBV_EVENT_CQ_ERR:
      return AsyncEventType::kCqErr;
    case IBV_EVENT_PORT_ACTIVE:
      return AsyncEventType::kPortActive;
    case IBV_EVENT_PORT_ERR:
      return AsyncEventType::kPortError;
    case IBV_EVENT_DEVICE_FATAL:
      return AsyncEventType::kDeviceFatal;
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_WQ_FATAL:
      break;
  }
  return AsyncEventType::kOther;
}

bool is_qp_event(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return true;
    default:
      return false;
  }
}

WcStatus map_wc_status(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return WcStatus::kSuccess;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::kFlushErr;
    case IBV_WC_RETRY_EXC_ERR:
      return WcStatus::kRetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::kRnrRetryExceeded;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::kRemoteAccessErr;
    case IBV_WC_REM_OP_ERR:
      return WcStatus::kRemoteOpErr;
    case IBV_WC_LOC_LEN_ERR:
      return WcStatus::kLocalLengthErr;
    case IBV_WC_LOC_PROT_ERR:
      return WcStatus::kLocalProtErr;
    default:
      return WcStatus::kOther;
  }
}

WcOpcode map_wc_opcode(ibv_wc_opcode op) {
  if (op == IBV_WC_SEND)
    return WcOpcode::kSend;
  // IBV_WC_RECV is a bit: "consumers can test if a completion is a receive by
  // testing (opcode & IBV_WC_RECV)" (verbs.h), but RECV_RDMA_WITH_IMM is a
  // write rcnet never issues, so only the plain receive counts.
  if (op == IBV_WC_RECV)
    return WcOpcode::kRecv;
  return WcOpcode::kOther;
}

WorkCompletion to_work_completion(const ibv_wc& wc) {
  WorkCompletion out;
  out.wr_id = wc.wr_id;
  out.status = map_wc_status(wc.status);
  out.qpn = wc.qp_num;
  if (wc.status != IBV_WC_SUCCESS) {
    out.raw_status = static_cast<std::uint32_t>(wc.status);
    out.raw_status_text = ibv_wc_status_str(wc.status);
    out.vendor_err = wc.vendor_err;
    return out;
  }
  out.opcode = map_wc_opcode(wc.opcode);
  out.byte_len = wc.byte_len;
  out.has_imm = (wc.wc_flags & IBV_WC_WITH_IMM) != 0;
  if (out.has_imm)
    out.imm = ntohl(wc.imm_data);
  return out;
}

std::optional<Endpoint> endpoint_from_sockaddr(const sockaddr* sa) {
  auto addr = IpAddr::from_sockaddr(sa);
  if (!addr)
    return std::nullopt;
  Endpoint ep;
  ep.addr = *addr;
  if (sa->sa_family == AF_INET) {
    ep.port = ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  } else {
    ep.port = ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  }
  return ep;
}

}  // namespace rcnet::rdma
