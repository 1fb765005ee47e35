// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma_audit.hpp"

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include <memory>
#include "catch2_compat.hpp"

#include "nl.hpp"
namespace daemon_rdma_audit_test {
using namespace rcnet;
using namespace rcnet::daemon;

namespace {

using Msg = NlMsgPtr;  // nl.hpp

constexpr int kQpType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET);

// What nldev.c's fill_res_qp_entry puts in a dump message (kernel 6.1).
Msg qp_message(std::uint32_t dev, const char* name) {
  Msg m(nlmsg_alloc_simple(kQpType, NLM_F_MULTI));
  REQUIRE(m);
  REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_DEV_INDEX, dev) == 0);
  REQUIRE(nla_put_string(m.get(), RDMA_NLDEV_ATTR_DEV_NAME, name) == 0);
  return m;
}

void put_user_qp(nl_msg* m, std::uint32_t lqpn, std::uint32_t rqpn, std::uint8_t state,
                 std::uint32_t pid) {
  nlattr* e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
  REQUIRE(e != nullptr);
  REQUIRE(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) == 0);
  REQUIRE(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, lqpn) == 0);
  REQUIRE(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_RQPN, rqpn) == 0);
  REQUIRE(nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, 2) == 0);  // IB_QPT_RC
  REQUIRE(nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, state) == 0);
  REQUIRE(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, pid) == 0);
  REQUIRE(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, 3) == 0);  // ignored
  REQUIRE(nla_nest_end(m, e) == 0);
}

}  // namespace

TEST_CASE("audit: a RES_QP_GET dump message parses into its QPs", "[ops][audit]") {
  Msg m = qp_message(4, "rxe_1");
  nlattr* table = nla_nest_start(m.get(), RDMA_NLDEV_ATTR_RES_QP);
  put_user_qp(m.get(), 17, 18, 3, 1234);
  put_user_qp(m.get(), 19, 20, 6, 999);
  // The kernel's GSI QP: no pid, the owning module's name instead.
  nlattr* k = nla_nest_start(m.get(), RDMA_NLDEV_ATTR_RES_QP_ENTRY);
  REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_RES_LQPN, 1) == 0);
  REQUIRE(nla_put_string(m.get(), RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core") == 0);
  nla_nest_end(m.get(), k);
  nla_nest_end(m.get(), table);

  std::vector<KernelQp> qps;
  REQUIRE(parse_qp_message(nlmsg_hdr(m.get()), qps).ok());
  REQUIRE(qps.size() == 3);
  CHECK(qps[0].dev_index == 4);
  CHECK(qps[0].dev_name == "rxe_1");
  CHECK(qps[0].port == 1);
  CHECK(qps[0].lqpn == 17);
  CHECK(qps[0].rqpn == std::optional<std::uint32_t>(18));
  CHECK(qps[0].type == std::optional<std::uint8_t>(2));
  CHECK(qps[0].state == std::optional<std::uint8_t>(3));
  CHECK(qps[0].pid == std::optional<std::uint32_t>(1234));
  CHECK(qps[1].state == std::optional<std::uint8_t>(6));
  CHECK_FALSE(qps[2].pid.has_value());
  CHECK(qps[2].kern_name == "ib_core");

  CHECK(qpns_of_pid(qps, 1234) == std::vector<std::uint32_t>{17});
  CHECK(qpns_of_pid(qps, 999) == std::vector<std::uint32_t>{19});
  CHECK(qpns_of_pid(qps, 1).empty());

  // A second message of the same dump appends.
  Msg m2 = qp_message(4, "rxe_1");
  nlattr* t2 = nla_nest_start(m2.get(), RDMA_NLDEV_ATTR_RES_QP);
  put_user_qp(m2.get(), 21, 22, 3, 1234);
  nla_nest_end(m2.get(), t2);
  REQUIRE(parse_qp_message(nlmsg_hdr(m2.get()), qps).ok());
  CHECK(qpns_of_pid(qps, 1234) == std::vector<std::uint32_t>{17, 21});
}

TEST_CASE("audit: a device without QPs, a wrong message, a malformed entry", "[ops][audit]") {
  std::vector<KernelQp> qps;
  Msg empty = qp_message(1, "rxe_0");
  CHECK(parse_qp_message(nlmsg_hdr(empty.get()), qps).ok());
  CHECK(qps.empty());

  Msg other(nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0));
  CHECK_FALSE(parse_qp_message(nlmsg_hdr(other.get()), qps).ok());

  // RES_LQPN two bytes long: not a u32, so the entry has no QPN.
  Msg bad = qp_message(1, "rxe_0");
  nlattr* t = nla_nest_start(bad.get(), RDMA_NLDEV_ATTR_RES_QP);
  nlattr* e = nla_nest_start(bad.get(), RDMA_NLDEV_ATTR_RES_QP_ENTRY);
  const std::uint16_t half = 17;
  REQUIRE(nla_put(bad.get(), RDMA_NLDEV_ATTR_RES_LQPN, sizeof half, &half) == 0);
  nla_nest_end(bad.get(), e);
  nla_nest_end(bad.get(), t);
  auto r = parse_qp_message(nlmsg_hdr(bad.get()), qps);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().context.find("LQPN") != std::string::npos);
  CHECK(qps.empty());
}

TEST_CASE("audit: device messages give index and name", "[ops][audit]") {
  Msg m(nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_MULTI));
  REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_DEV_INDEX, 7) == 0);
  REQUIRE(nla_put_string(m.get(), RDMA_NLDEV_ATTR_DEV_NAME, "rxe_2") == 0);
  auto d = parse_device_message(nlmsg_hdr(m.get()));
  REQUIRE(d.ok());
  CHECK(d->index == 7);
  CHECK(d->name == "rxe_2");
  Msg noname(nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0));
  REQUIRE(nla_put_u32(noname.get(), RDMA_NLDEV_ATTR_DEV_INDEX, 7) == 0);
  CHECK_FALSE(parse_device_message(nlmsg_hdr(noname.get())).ok());
}

TEST_CASE("audit: the reply names a QP the manager forgot but the seam still holds",
          "[ops][audit]") {
  auto qp = [](std::uint32_t qpn, std::optional<std::uint32_t> rqpn, std::uint8_t state,
               std::uint32_t pid) {
    KernelQp q;
    q.dev_name = "rxe_1";
    q.port = 1;
    q.lqpn = qpn;
    q.rqpn = rqpn;
    q.state = state;
    q.pid = pid;
    return q;
  };
  const std::vector<KernelQp> kernel{qp(17, 18, 3, 1234), qp(21, std::nullopt, 6, 1234),
                                     qp(30, 31, 3, 999)};
  // The manager lost QPN 21 but the seam never destroyed it: the kernel
  // agrees with the seam, so only the seam check can name the leak.
  const ctl::json r = audit_report("rxe_1", 1234, {17}, {17, 21}, kernel);
  CHECK(r["ok"] == false);
  CHECK(r["pid"] == 1234);
  CHECK(r["device"] == "rxe_1");
  CHECK(r["kernel_only"] == ctl::json::array({21}));
  CHECK(r["seam_qps"] == 2);
  CHECK(r["seam_only"] == ctl::json::array({21}));
  CHECK(r["manager_only"].empty());
  // Only this process's QPs, with the kernel's state names.
  REQUIRE(r["kernel"].size() == 2);
  CHECK(r["kernel"][0]["state"] == "RTS");
  CHECK(r["kernel"][0]["rqpn"] == 18);
  CHECK(r["kernel"][1]["state"] == "ERR");
  CHECK(r["kernel"][1]["rqpn"].is_null());

  // Three views that agree, the manager's in any order.
  const ctl::json good = audit_report("rxe_1", 1234, {21, 17}, {17, 21}, kernel);
  CHECK(good["ok"] == true);
  CHECK(good["daemon_qps"] == 2);

  // Two rails on one device: rail A holds 17, rail B holds 21. Each rail's
  // report leaves the other's QP out of the kernel's side ...
  const ctl::json a = audit_report("rxe_1", 1234, {17}, {17}, kernel, {21});
  CHECK(a["ok"] == true);
  CHECK(a["kernel_qps"] == 1);
  CHECK(a["kernel"].size() == 1);
  const ctl::json b = audit_report("rxe_1", 1234, {21}, {21}, kernel, {17});
  CHECK(b["ok"] == true);
  // ... and without it, B's QP is A's leak.
  const ctl::json alone = audit_report("rxe_1", 1234, {17}, {17}, kernel);
  CHECK(alone["ok"] == false);
  CHECK(alone["kernel_only"] == ctl::json::array({21}));
}

TEST_CASE("audit compare finds differences both ways", "[ops][audit]") {
  const std::vector<rdma::Qpn> daemon = {17, 18, 19, 40};
  const std::vector<rdma::Qpn> kernel = {1, 0, 19, 18, 17, 21, 22, 17};
  const ctl::AuditResult a = audit_compare(daemon, kernel);
  CHECK_FALSE(a.ok());
  CHECK(a.kernel_only == std::vector<rdma::Qpn>{21, 22});
  CHECK(a.daemon_only == std::vector<rdma::Qpn>{40});
  CHECK(a.daemon_count == 4);
  CHECK(a.kernel_count == 5);  // 0 and 1 ignored, 17 once

  const ctl::json j = ctl::audit_json(a);
  CHECK(j["ok"] == false);
  CHECK(j["kernel_only"] == ctl::json::array({21, 22}));
  CHECK(j["daemon_only"] == ctl::json::array({40}));
  CHECK(j["kernel_qps"] == 5);

  const std::vector<rdma::Qpn> same = {40, 19, 18, 17};
  const ctl::AuditResult b = audit_compare(daemon, same);
  CHECK(b.ok());
  CHECK(ctl::audit_json(b)["ok"] == true);
  CHECK(audit_compare({}, {}).ok());
}

}  // namespace daemon_rdma_audit_test
