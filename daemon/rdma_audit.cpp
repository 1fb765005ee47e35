// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma_audit.hpp"

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>

#include "nl.hpp"

namespace rcnet::daemon {

namespace {

constexpr int kMaxAttr = RDMA_NLDEV_ATTR_MAX - 1;
constexpr int kQpGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET);
constexpr int kDevGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);

}  // namespace

std::optional<std::uint32_t> nl_get_u32(nlattr* a) {
  if (a == nullptr || nla_len(a) < static_cast<int>(sizeof(std::uint32_t)))
    return std::nullopt;
  return nla_get_u32(a);
}
std::optional<std::uint8_t> nl_get_u8(nlattr* a) {
  if (a == nullptr || nla_len(a) < 1)
    return std::nullopt;
  return nla_get_u8(a);
}
std::string nl_get_string(nlattr* a) {
  if (a == nullptr || nla_len(a) <= 0)
    return {};
  const auto* p = static_cast<const char*>(nla_data(a));
  return std::string(p, strnlen(p, static_cast<std::size_t>(nla_len(a))));
}

Result<void> parse_qp_message(const nlmsghdr* nlh, std::vector<KernelQp>& out) {
  if (nlh == nullptr || nlh->nlmsg_type != kQpGetType)
    return Error::invalid("RDMA netlink: not a RES_QP_GET message");
  nlattr* tb[kMaxAttr + 1] = {};
  // libnl's prototypes take non-const pointers but only read the message.
  auto* msg = const_cast<nlmsghdr*>(nlh);
  if (int rc = nlmsg_parse(msg, 0, tb, kMaxAttr, nullptr); rc < 0)
    return Error::invalid(std::string("RDMA netlink: QP message: ") + nl_geterror(rc));
  const std::uint32_t dev_index = nl_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]).value_or(0);
  const std::string dev_name = nl_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
  nlattr* table = tb[RDMA_NLDEV_ATTR_RES_QP];
  if (table == nullptr)
    return {};  // a device with no QPs
  nlattr* entry = nullptr;
  int rem = 0;
  nla_for_each_nested(entry, table, rem) {
    if (nla_type(entry) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
      continue;
    nlattr* e[kMaxAttr + 1] = {};
    if (int rc = nla_parse_nested(e, kMaxAttr, entry, nullptr); rc < 0)
      return Error::invalid(std::string("RDMA netlink: QP entry: ") + nl_geterror(rc));
    auto lqpn = nl_get_u32(e[RDMA_NLDEV_ATTR_RES_LQPN]);
    if (!lqpn)
      return Error::invalid("RDMA netlink: QP entry without RES_LQPN");
    KernelQp q;
    q.dev_index = dev_index;
    q.dev_name = dev_name;
    q.port = nl_get_u32(e[RDMA_NLDEV_ATTR_PORT_INDEX]).value_or(0);
    q.lqpn = *lqpn;
    q.rqpn = nl_get_u32(e[RDMA_NLDEV_ATTR_RES_RQPN]);
    q.type = nl_get_u8(e[RDMA_NLDEV_ATTR_RES_TYPE]);
    q.state = nl_get_u8(e[RDMA_NLDEV_ATTR_RES_STATE]);
    q.pid = nl_get_u32(e[RDMA_NLDEV_ATTR_RES_PID]);
    q.kern_name = nl_get_string(e[RDMA_NLDEV_ATTR_RES_KERN_NAME]);
    out.push_back(std::move(q));
  }
  return {};
}

Result<KernelDevice> parse_device_message(const nlmsghdr* nlh) {
  if (nlh == nullptr || nlh->nlmsg_type != kDevGetType)
    return Error::invalid("RDMA netlink: not a device message");
  nlattr* tb[kMaxAttr + 1] = {};
  auto* msg = const_cast<nlmsghdr*>(nlh);
  if (int rc = nlmsg_parse(msg, 0, tb, kMaxAttr, nullptr); rc < 0)
    return Error::invalid(std::string("RDMA netlink: device message: ") + nl_geterror(rc));
  auto index = nl_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
  std::string name = nl_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
  if (!index || name.empty())
    return Error::invalid("RDMA netlink: device message without index or name");
  return KernelDevice{*index, std::move(name)};
}

namespace {

// State of one dump, shared with libnl's callbacks (which must not throw:
// they run inside nl_recvmsgs' C frames).
struct DumpState {
  std::vector<KernelQp>* qps = nullptr;          // QP dump
  std::vector<KernelDevice>* devices = nullptr;  // device dump
  std::optional<Error> error;
  bool finished = false;
};

int on_valid(nl_msg* msg, void* arg) noexcept {
  auto* st = static_cast<DumpState*>(arg);
  try {
    const nlmsghdr* nlh = nlmsg_hdr(msg);
    if (st->qps != nullptr) {
      if (auto r = parse_qp_message(nlh, *st->qps); !r && !st->error)
        st->error = r.error();
    } else if (st->devices != nullptr) {
      auto d = parse_device_message(nlh);
      if (d)
        st->devices->push_back(std::move(*d));
      else if (!st->error)
        st->error = d.error();
    }
  } catch (...) {
    // Only allocation can throw here; a partial table must not pass as whole.
    if (!st->error)
      st->error = Error::from_errno(ENOMEM, "RDMA netlink: parsing the dump");
  }
  return NL_OK;
}

int on_finish(nl_msg*, void* arg) noexcept {
  static_cast<DumpState*>(arg)->finished = true;
  return NL_OK;
}

// Dumps end with NLMSG_DONE; an ACK request would only add a message.
Result<NlSockPtr> open_dump_socket() {
  return open_request_socket(NETLINK_RDMA, {.receive_timeout = kDumpTimeout, .auto_ack = false});
}

Result<void> run_dump(nl_sock* sock, int type, std::optional<std::uint32_t> dev_index,
                      DumpState& st, const char* what) {
  NlMsgPtr msg(nlmsg_alloc_simple(type, NLM_F_REQUEST | NLM_F_DUMP));
  if (!msg)
    return Error::from_errno(ENOMEM, what);
  if (dev_index) {
    // nldev answers a resource dump for one device only: its index is required.
    if (int rc = nla_put_u32(msg.get(), RDMA_NLDEV_ATTR_DEV_INDEX, *dev_index); rc < 0)
      return nl_error(rc, what);
  }
  if (int rc = nl_send_auto(sock, msg.get()); rc < 0)
    return nl_error(rc, what);
  nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &st);
  nl_socket_modify_cb(sock, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &st);
  const int rc = nl_recvmsgs_default(sock);
  if (rc < 0)
    return nl_error(rc, what);
  if (st.error)
    return *st.error;
  // nl_recvmsgs() also returns when recvmsg() times out (SO_RCVTIMEO): only
  // NLMSG_DONE proves the table is complete.
  if (!st.finished)
    return Error::from_errno(ETIMEDOUT, what);
  return {};
}

}  // namespace

namespace {
// The device dump on an open socket (both public dumps start with it).
Result<std::vector<KernelDevice>> dump_devices_on(nl_sock* sock) {
  std::vector<KernelDevice> devices;
  DumpState st;
  st.devices = &devices;
  if (auto r = run_dump(sock, kDevGetType, std::nullopt, st, "RDMA netlink: device dump"); !r)
    return r.error();
  return devices;
}
}  // namespace

Result<std::vector<KernelDevice>> dump_kernel_devices() {
  auto sock = open_dump_socket();
  if (!sock)
    return sock.error();
  return dump_devices_on(sock->get());
}

Result<std::vector<KernelQp>> dump_kernel_qps(const std::string& device) {
  auto sock = open_dump_socket();
  if (!sock)
    return sock.error();
  auto devices = dump_devices_on(sock->get());
  if (!devices)
    return devices.error();
  std::vector<KernelQp> qps;
  bool found = device.empty();
  for (const KernelDevice& d : *devices) {
    if (!device.empty() && d.name != device)
      continue;
    found = true;
    DumpState st;
    st.qps = &qps;
    const std::string what = "RDMA netlink: QP dump of " + d.name;
    if (auto r = run_dump(sock->get(), kQpGetType, d.index, st, what.c_str()); !r)
      return r.error();
  }
  if (!found)
    return Error::from_errno(ENODEV, "RDMA netlink: no RDMA device " + device);
  return qps;
}

std::vector<std::uint32_t> qpns_of_pid(const std::vector<KernelQp>& qps, std::uint32_t pid) {
  std::vector<std::uint32_t> out;
  for (const KernelQp& q : qps) {
    if (q.pid && *q.pid == pid)
      out.push_back(q.lqpn);
  }
  return out;
}

namespace {

// ib_qp_state (include/rdma/ib_verbs.h), as `rdma resource show qp` names them.
std::string_view kernel_qp_state(std::uint8_t s) {
  static constexpr std::string_view kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return s < std::size(kNames) ? kNames[s] : "UNKNOWN";
}

}  // namespace

ctl::AuditResult audit_compare(std::span<const rdma::Qpn> daemon,
                               std::span<const rdma::Qpn> kernel) {
  std::vector<rdma::Qpn> d(daemon.begin(), daemon.end());
  std::vector<rdma::Qpn> k;
  for (rdma::Qpn q : kernel) {
    if (q > 1)
      k.push_back(q);
  }
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  ctl::AuditResult r;
  r.daemon_count = d.size();
  r.kernel_count = k.size();
  std::set_difference(k.begin(), k.end(), d.begin(), d.end(), std::back_inserter(r.kernel_only));
  std::set_difference(d.begin(), d.end(), k.begin(), k.end(), std::back_inserter(r.daemon_only));
  return r;
}

ctl::json audit_report(const std::string& device, std::uint32_t pid,
                       std::vector<std::uint32_t> manager_qpns,
                       const std::vector<std::uint32_t>& seam_qpns,
                       const std::vector<KernelQp>& all_kernel,
                       const std::vector<std::uint32_t>& other_rails) {
  using ctl::json;
  std::vector<KernelQp> kernel;
  for (const KernelQp& q : all_kernel) {
    if (std::find(other_rails.begin(), other_rails.end(), q.lqpn) == other_rails.end())
      kernel.push_back(q);
  }
  std::vector<std::uint32_t>& mine = manager_qpns;
  std::sort(mine.begin(), mine.end());
  json data = ctl::audit_json(audit_compare(mine, qpns_of_pid(kernel, pid)));
  data["pid"] = pid;
  data["device"] = device;
  std::vector<std::uint32_t> seam_only, manager_only;
  std::set_difference(seam_qpns.begin(), seam_qpns.end(), mine.begin(), mine.end(),
                      std::back_inserter(seam_only));
  std::set_difference(mine.begin(), mine.end(), seam_qpns.begin(), seam_qpns.end(),
                      std::back_inserter(manager_only));
  data["seam_qps"] = seam_qpns.size();
  data["seam_only"] = seam_only;
  data["manager_only"] = manager_only;
  if (!seam_only.empty() || !manager_only.empty())
    data["ok"] = false;
  json kq = json::array();
  for (const KernelQp& q : kernel) {
    if (!q.pid || *q.pid != pid)
      continue;
    kq.push_back({{"qpn", q.lqpn},
                  {"rqpn", q.rqpn ? json(*q.rqpn) : json(nullptr)},
                  {"state", q.state ? json(kernel_qp_state(*q.state)) : json(nullptr)},
                  {"device", q.dev_name},
                  {"port", q.port}});
  }
  data["kernel"] = std::move(kq);
  return data;
}

Result<ctl::json> audit_qps(const std::string& device, std::vector<std::uint32_t> manager_qpns,
                            const std::vector<std::uint32_t>& seam_qpns,
                            const std::vector<std::uint32_t>& other_rails) {
  auto kernel = dump_kernel_qps(device);
  if (!kernel)
    return kernel.error();
  return audit_report(device, static_cast<std::uint32_t>(::getpid()), std::move(manager_qpns),
                      seam_qpns, *kernel, other_rails);
}

}  // namespace rcnet::daemon
