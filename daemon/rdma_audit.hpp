// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The kernel's view of rcnetd's QPs, read over RDMA netlink (NETLINK_RDMA,
// the nldev client): the table `rdma resource show qp` prints (rdma(8),
// iproute2 rdma/res-qp.c; kernel drivers/infiniband/core/nldev.c), and the
// ctl `audit` reply assembled from it: the daemon's own QPNs compared with
// the kernel's (audit_compare), so that a QP leaked by the daemon, or
// one it believes alive but the kernel has destroyed, shows up.
//
// Synchronous on purpose: a dump over a local netlink socket answers in well
// under a millisecond per device; the socket has a receive timeout
// (kDumpTimeout) so a kernel that does not answer cannot stall the loop for
// longer. Loop thread only (libnl is not used from any other thread).
#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctl/views.hpp"
#include "rdma/seam.hpp"
#include "util/result.hpp"
#include "util/time.hpp"

struct nlattr;

namespace rcnet::daemon {

// An RDMA netlink attribute's payload, its length checked first: the
// messages are parsed without a policy (the kernel's nldev_policy is not
// exported). nullopt / "" when `a` is null or too short. Shared by the
// audit's dumps and the netlink monitor (rdma_monitor.cpp).
std::optional<std::uint32_t> nl_get_u32(nlattr* a);
std::optional<std::uint8_t> nl_get_u8(nlattr* a);
std::string nl_get_string(nlattr* a);

// One QP of the kernel's resource tracker (RDMA_NLDEV_ATTR_RES_QP_ENTRY).
struct KernelQp {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::uint32_t port = 0;  // 0 when the QP is not bound to a port yet
  std::uint32_t lqpn = 0;
  std::optional<std::uint32_t> rqpn;  // connected QPs only
  std::optional<std::uint8_t> type;   // IB_QPT_* (2 = RC)
  std::optional<std::uint8_t> state;  // IB_QPS_* (3 = RTS, 6 = ERR)
  std::optional<std::uint32_t> pid;   // user QPs: owner pid in our pid namespace
  std::string kern_name;              // kernel QPs: the owning module
};

// One RDMA device (RDMA_NLDEV_CMD_GET).
struct KernelDevice {
  std::uint32_t index = 0;
  std::string name;
};

inline constexpr Duration kDumpTimeout = std::chrono::milliseconds(500);

// Parses one RDMA_NLDEV_CMD_RES_QP_GET reply message and appends its QPs to
// `out`. A dump may split one device's table over several messages; each
// carries the device's index and name. Errors (EINVAL): not an nldev QP
// message, or an entry without RES_LQPN. Unknown attributes are skipped, as
// the kernel adds new ones over time.
Result<void> parse_qp_message(const nlmsghdr* nlh, std::vector<KernelQp>& out);
// Parses one RDMA_NLDEV_CMD_GET reply; EINVAL without DEV_INDEX/DEV_NAME.
Result<KernelDevice> parse_device_message(const nlmsghdr* nlh);

// Every RDMA device (RDMA_NLDEV_CMD_GET dump). Errors: those of
// dump_kernel_qps but ENODEV.
Result<std::vector<KernelDevice>> dump_kernel_devices();

// Every RDMA device, then the QP table of `device` (every device when empty).
// Errors: the socket cannot be opened or connected (EPROTONOSUPPORT without
// RDMA netlink support in the kernel), ENODEV when `device` does not exist,
// ETIMEDOUT when the kernel did not finish a dump within kDumpTimeout.
Result<std::vector<KernelQp>> dump_kernel_qps(const std::string& device);

// The QPNs among `qps` owned by `pid` (normally getpid()).
std::vector<std::uint32_t> qpns_of_pid(const std::vector<KernelQp>& qps, std::uint32_t pid);

// --- The ctl "audit" reply ------------------------------------------------------
// The daemon's QPNs against the kernel's (already filtered to rcnetd's pid by
// the caller), as sorted sets: duplicates count once, and QPN 0 and 1 (the
// SMI/GSI special QPs) are ignored on the kernel side.
ctl::AuditResult audit_compare(std::span<const rdma::Qpn> daemon,
                               std::span<const rdma::Qpn> kernel);

// Three views of the QPs of process `pid` on `device`: the connection
// manager's (`manager_qpns`, any order), the seam's own record (`seam_qpns`,
// ascending: rdma::VerbsSeam::qpns()) and the kernel's (`kernel`, every
// process's; filtered to `pid` here). The data is
// ctl::audit_json(audit_compare(manager, kernel)) plus "pid", "device",
// "seam_qps", "seam_only" and "manager_only" (a QP the manager forgot but
// never destroyed is a leak the kernel check alone would not name; either
// list non-empty makes "ok" false) and "kernel": each of the process's QPs as
// the kernel shows it {qpn, rqpn, state (IB_QPS_* name as `rdma resource show
// qp` prints it), device, port}. `other_rails`: the QPNs the seams of
// other rails on the same device hold (rails on ports of one device,
// rdma/verbs_device.hpp); the kernel's QPs among them are those rails' and
// left out here, so a QP no seam holds shows in each such rail's report.
// Pure: no I/O.
ctl::json audit_report(const std::string& device, std::uint32_t pid,
                       std::vector<std::uint32_t> manager_qpns,
                       const std::vector<std::uint32_t>& seam_qpns,
                       const std::vector<KernelQp>& kernel,
                       const std::vector<std::uint32_t>& other_rails = {});

// audit_report() for this process (getpid()) against dump_kernel_qps(device).
// Errors: those of dump_kernel_qps. Synchronous, bounded by kDumpTimeout.
Result<ctl::json> audit_qps(const std::string& device, std::vector<std::uint32_t> manager_qpns,
                            const std::vector<std::uint32_t>& seam_qpns,
                            const std::vector<std::uint32_t>& other_rails = {});

}  // namespace rcnet::daemon
