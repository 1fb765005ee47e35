// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The RDMA netlink monitor (Linux 6.12 and later; docs/design.md "Device
// loss and return"): the kernel multicasts RDMA_NLDEV_CMD_MONITOR messages
// on RDMA_NL_GROUP_NOTIFY when an RDMA device registers or unregisters and
// when a netdev attaches to or detaches from one of its ports (the kernel's
// drivers/infiniband/core/nldev.c rdma_nl_notify_event; `rdma monitor` of
// iproute2 6.13 prints them). rcnetd uses them to release a removed device's
// rails at once and to adopt a returning device without waiting for the
// readopt poll (daemon/rail_runtime.hpp), which stays as the fallback.
//
// Three parts: the parsers (pure, tested with hand-built messages), the
// decision of what each rail does about an event (pure), and the socket on
// the event loop. Loop thread only.
#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "event_loop.hpp"
#include "nl.hpp"
#include "rdma_nl_uapi.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

// One RDMA_NLDEV_CMD_MONITOR message. `type` is the raw
// RDMA_NLDEV_ATTR_EVENT_TYPE (rdma_nl::NotifyEvent; later kernels add more).
// Every other field is what the kernel sent, absent when it did not (a
// netdev event for a netdev in another namespace carries only the type).
struct MonitorEvent {
  std::uint8_t type = 0;
  std::optional<std::uint32_t> dev_index;
  std::string dev_name;
  std::optional<std::uint32_t> port;
  std::optional<std::uint32_t> ndev_index;
  std::string ndev_name;
};
// "REGISTER", "UNREGISTER", "NETDEV_ATTACH", "NETDEV_DETACH", "event <n>".
std::string monitor_event_name(std::uint8_t type);
// One line for the journal: "UNREGISTER of rxe0 (index 3)", "NETDEV_ATTACH
// of rxe0 port 1 to v_1 (ifindex 7)".
std::string describe(const MonitorEvent& ev);

// Parses one RDMA_NLDEV_CMD_MONITOR message. Errors (EINVAL): another
// message type, attributes that do not parse, no EVENT_TYPE. Lengths are
// checked before a payload is read (no policy: nldev's is not exported).
Result<MonitorEvent> parse_monitor_message(const nlmsghdr* nlh);
// Parses the RDMA_NLDEV_CMD_SYS_GET reply: whether it says
// RDMA_NLDEV_SYS_ATTR_MONITOR_MODE = 1 (6.12+; 6.1 does not send it).
// Errors (EINVAL): another message type, attributes that do not parse.
Result<bool> parse_sys_message(const nlmsghdr* nlh);

// --- The decision ----------------------------------------------------------------------
// What the daemon knows of one rail when an event comes.
struct RailDeviceView {
  std::string device;                  // its RDMA device's name (kept while lost)
  std::optional<std::uint32_t> index;  // its ib_device index, when known
  bool present = true;                 // Manager::device_present
  int ifindex = 0;                     // the netdev holding its address; 0 unknown
};
enum class MonitorAction : std::uint8_t {
  kNone,
  kRelease,  // Manager::device_unregistered: release the device at once
  kAdopt,    // RailRuntime::adopt_now: try to open the device again now
  kLate,     // the device is already released: the other path was first
};
// One action per rail, in `rails`' order:
// - UNREGISTER of a rail's device (by index when both are known, else by
//   name): kRelease while present, kLate once lost. A present rail whose
//   device has the same name but another index is a new registration under
//   the old name: left alone.
// - REGISTER of any device, or NETDEV_ATTACH to the rail's netdev (or to an
//   ifindex the event does not say): kAdopt for each lost rail. Adopting
//   costs a bind that finds no device when it is not the rail's (well under
//   a millisecond), and a renamed or re-created device may come back under
//   another name, so the name is not required to match.
// - NETDEV_DETACH and unknown types: kNone (the async events and the rail's
//   rtnetlink monitor see what they mean for the rail).
std::vector<MonitorAction> decide(const MonitorEvent& ev, std::span<const RailDeviceView> rails);

// --- The socket --------------------------------------------------------------------------
class RdmaMonitor {
 public:
  struct Handlers {
    // A parsed event.
    std::function<void(const MonitorEvent&)> event;
    // Notifications were lost (ENOBUFS): re-check every lost rail now.
    std::function<void()> overflow;
  };
  // Whether the kernel has the monitor: RDMA_NLDEV_CMD_SYS_GET answers with
  // RDMA_NLDEV_SYS_ATTR_MONITOR_MODE = 1. false (no error) on 6.1, which
  // answers without it. Errors: no RDMA netlink (EPROTONOSUPPORT), no answer
  // within kDumpTimeout (ETIMEDOUT). Synchronous, bounded.
  static Result<bool> probe();
  // Subscribes a non-blocking NETLINK_RDMA socket to RDMA_NL_GROUP_NOTIFY and
  // watches it on `loop`. Errors: socket, bind or membership (EPERM without
  // CAP_NET_ADMIN on kernels before 6.12, which need it for any RDMA
  // multicast group), sd_event_add_io.
  static Result<std::unique_ptr<RdmaMonitor>> create(EventLoop& loop, Handlers handlers);
  ~RdmaMonitor();
  RdmaMonitor(const RdmaMonitor&) = delete;
  RdmaMonitor& operator=(const RdmaMonitor&) = delete;

  std::uint64_t events() const { return events_; }
  std::uint64_t malformed() const { return malformed_; }
  std::uint64_t overflows() const { return overflows_; }
  // false once the socket failed (a receive error other than ENOBUFS): the
  // source is off and the poll carries on alone.
  bool healthy() const { return healthy_; }

 private:
  explicit RdmaMonitor(Handlers h) : handlers_(std::move(h)) {}
  void on_readable();
  static int on_message(nl_msg* msg, void* self) noexcept;

  Handlers handlers_;
  NlSockPtr sock_;
  EventSource source_;
  std::uint64_t events_ = 0, malformed_ = 0, overflows_ = 0;
  bool healthy_ = true;
};

}  // namespace rcnet::daemon
