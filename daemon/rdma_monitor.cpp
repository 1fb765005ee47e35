// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma_monitor.hpp"

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <cstring>

#include "rdma_audit.hpp"

namespace rcnet::daemon {

namespace {

constexpr int kMonitorType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, rdma_nl::kCmdMonitor);
constexpr int kSysGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);

using AttrTable = nlattr * [rdma_nl::kMonitorMaxAttr + 1];

Result<void> parse_attrs(const nlmsghdr* nlh, AttrTable& tb, const char* what) {
  // libnl's prototypes take non-const pointers but only read the message.
  if (int rc = nlmsg_parse(const_cast<nlmsghdr*>(nlh), 0, tb, rdma_nl::kMonitorMaxAttr, nullptr);
      rc < 0) {
    return Error::invalid(std::string("RDMA netlink: ") + what + ": " + nl_geterror(rc));
  }
  return {};
}

}  // namespace

std::string monitor_event_name(std::uint8_t type) {
  switch (static_cast<rdma_nl::NotifyEvent>(type)) {
    case rdma_nl::NotifyEvent::kRegister:
      return "REGISTER";
    case rdma_nl::NotifyEvent::kUnregister:
      return "UNREGISTER";
    case rdma_nl::NotifyEvent::kNetdevAttach:
      return "NETDEV_ATTACH";
    case rdma_nl::NotifyEvent::kNetdevDetach:
      return "NETDEV_DETACH";
  }
  return "event " + std::to_string(type);
}

std::string describe(const MonitorEvent& ev) {
  std::string s = monitor_event_name(ev.type);
  s += " of " + (ev.dev_name.empty() ? std::string("?") : ev.dev_name);
  if (ev.dev_index)
    s += " (index " + std::to_string(*ev.dev_index) + ")";
  if (ev.port)
    s += " port " + std::to_string(*ev.port);
  if (ev.ndev_index) {
    s += ev.type == static_cast<std::uint8_t>(rdma_nl::NotifyEvent::kNetdevAttach) ? " to " : " ";
    s += (ev.ndev_name.empty() ? std::string("?") : ev.ndev_name) + " (ifindex " +
         std::to_string(*ev.ndev_index) + ")";
  }
  return s;
}

Result<MonitorEvent> parse_monitor_message(const nlmsghdr* nlh) {
  if (nlh == nullptr || nlh->nlmsg_type != kMonitorType)
    return Error::invalid("RDMA netlink: not a MONITOR message");
  AttrTable tb = {};
  if (auto r = parse_attrs(nlh, tb, "MONITOR message"); !r)
    return r.error();
  const auto type = nl_get_u8(tb[rdma_nl::kAttrEventType]);
  if (!type)
    return Error::invalid("RDMA netlink: MONITOR message without EVENT_TYPE");
  MonitorEvent ev;
  ev.type = *type;
  ev.dev_index = nl_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
  ev.dev_name = nl_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
  ev.port = nl_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
  ev.ndev_index = nl_get_u32(tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
  ev.ndev_name = nl_get_string(tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
  return ev;
}

Result<bool> parse_sys_message(const nlmsghdr* nlh) {
  if (nlh == nullptr || nlh->nlmsg_type != kSysGetType)
    return Error::invalid("RDMA netlink: not a SYS_GET reply");
  AttrTable tb = {};
  if (auto r = parse_attrs(nlh, tb, "SYS_GET reply"); !r)
    return r.error();
  return nl_get_u8(tb[rdma_nl::kAttrMonitorMode]).value_or(0) == 1;
}

std::vector<MonitorAction> decide(const MonitorEvent& ev, std::span<const RailDeviceView> rails) {
  using rdma_nl::NotifyEvent;
  std::vector<MonitorAction> out(rails.size(), MonitorAction::kNone);
  for (std::size_t k = 0; k < rails.size(); ++k) {
    const RailDeviceView& r = rails[k];
    switch (static_cast<NotifyEvent>(ev.type)) {
      case NotifyEvent::kUnregister: {
        bool mine = false;
        if (ev.dev_index && r.index)
          mine = *ev.dev_index == *r.index;
        else
          mine = !ev.dev_name.empty() && ev.dev_name == r.device;
        if (mine)
          out[k] = r.present ? MonitorAction::kRelease : MonitorAction::kLate;
        break;
      }
      case NotifyEvent::kRegister:
        if (!r.present)
          out[k] = MonitorAction::kAdopt;
        break;
      case NotifyEvent::kNetdevAttach:
        if (!r.present &&
            (!ev.ndev_index || r.ifindex == 0 || static_cast<int>(*ev.ndev_index) == r.ifindex)) {
          out[k] = MonitorAction::kAdopt;
        }
        break;
      case NotifyEvent::kNetdevDetach:
      default:
        break;
    }
  }
  return out;
}

// --- RdmaMonitor ---------------------------------------------------------------------------

namespace {

struct ProbeState {
  std::optional<bool> monitor;
  std::optional<Error> error;
};

int on_probe_reply(nl_msg* msg, void* arg) noexcept {
  auto* st = static_cast<ProbeState*>(arg);
  try {
    auto r = parse_sys_message(nlmsg_hdr(msg));
    if (r)
      st->monitor = *r;
    else
      st->error = r.error();
  } catch (...) {
    st->error = Error::from_errno(ENOMEM, "RDMA netlink: SYS_GET reply");
  }
  return NL_OK;
}

}  // namespace

Result<bool> RdmaMonitor::probe() {
  auto opened = open_request_socket(NETLINK_RDMA, {.receive_timeout = kDumpTimeout});
  if (!opened)
    return opened.error();
  NlSockPtr sock = std::move(*opened);
  NlMsgPtr msg(nlmsg_alloc_simple(kSysGetType, NLM_F_REQUEST | NLM_F_ACK));
  if (!msg)
    return Error::from_errno(ENOMEM, "RDMA netlink: SYS_GET");
  if (int rc = nl_send_auto(sock.get(), msg.get()); rc < 0)
    return nl_error(rc, "RDMA netlink: SYS_GET");
  ProbeState st;
  nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, on_probe_reply, &st);
  // The reply, then the ACK (which ends nl_recvmsgs' wait for it); a receive
  // timeout ends it too, without a reply.
  const int rc = nl_wait_for_ack(sock.get());
  if (st.error)
    return *st.error;
  if (st.monitor)
    return *st.monitor;
  if (rc < 0)
    return nl_error(rc, "RDMA netlink: SYS_GET");
  return Error::from_errno(ETIMEDOUT, "RDMA netlink: SYS_GET: no reply");
}

Result<std::unique_ptr<RdmaMonitor>> RdmaMonitor::create(EventLoop& loop, Handlers handlers) {
  std::unique_ptr<RdmaMonitor> m(new RdmaMonitor(std::move(handlers)));
  auto sock = open_notification_socket({
      .protocol = NETLINK_RDMA,
      .groups = {{rdma_nl::kGroupNotify, "RDMA_NL_GROUP_NOTIFY"}},
      .on_message = &RdmaMonitor::on_message,
      .arg = m.get(),
  });
  if (!sock)
    return sock.error();
  m->sock_ = std::move(*sock);
  auto src = loop.add_io(nl_socket_get_fd(m->sock_.get()), EPOLLIN, "rdma-monitor",
                         [p = m.get()](std::uint32_t) { p->on_readable(); });
  if (!src)
    return src.error();
  m->source_ = std::move(*src);
  return m;
}

RdmaMonitor::~RdmaMonitor() = default;

void RdmaMonitor::on_readable() {
  const int r = drain_notifications(sock_.get(), [this] {
    // What the lost notifications said is unknown, so every lost rail is
    // checked now (the poll's work).
    ++overflows_;
    spdlog::warn(
        "RDMA netlink monitor: notifications lost (socket overflow); checking every "
        "lost rail's device now");
    if (handlers_.overflow)
      handlers_.overflow();
  });
  if (r < 0) {
    healthy_ = false;
    (void)source_.set_enabled(SD_EVENT_OFF);
    spdlog::warn("RDMA netlink monitor: receive failed ({}); the readopt poll carries on alone",
                 nl_geterror(-r));
  }
}

int RdmaMonitor::on_message(nl_msg* msg, void* self) noexcept {
  auto* m = static_cast<RdmaMonitor*>(self);
  try {
    auto ev = parse_monitor_message(nlmsg_hdr(msg));
    if (!ev) {
      ++m->malformed_;
      spdlog::debug("RDMA netlink monitor: {}", ev.error().message());
      return NL_OK;
    }
    ++m->events_;
    if (m->handlers_.event)
      m->handlers_.event(*ev);
  } catch (const std::exception& e) {
    // Nothing may unwind through libnl's C frames.
    spdlog::error("RDMA netlink monitor: event handler failed: {}", e.what());
  } catch (...) {
    spdlog::error("RDMA netlink monitor: event handler failed");
  }
  return NL_OK;
}

}  // namespace rcnet::daemon
