// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The RDMA netlink monitor (daemon/rdma_monitor.hpp) without a kernel:
// MONITOR and SYS_GET messages built by hand as Linux 6.12's nldev.c sends
// them, and what each rail does about an event.
#include "rdma_monitor.hpp"

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>
#include "catch2_compat.hpp"

#include "nl.hpp"
namespace daemon_rdma_monitor_test {
using namespace rcnet;
using namespace rcnet::daemon;
using rdma_nl::NotifyEvent;

namespace {

using Msg = NlMsgPtr;  // nl.hpp

constexpr int kMonitorType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, rdma_nl::kCmdMonitor);

// What rdma_nl_notify_event puts in a message: the device's handle, for a
// netdev event the port and the netdev, then the event type.
Msg monitor_message(NotifyEvent type, std::uint32_t dev, const char* name,
                    std::optional<std::uint32_t> port = std::nullopt,
                    std::optional<std::uint32_t> ndev = std::nullopt,
                    const char* ndev_name = nullptr) {
  Msg m(nlmsg_alloc_simple(kMonitorType, 0));
  REQUIRE(m);
  REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_DEV_INDEX, dev) == 0);
  REQUIRE(nla_put_string(m.get(), RDMA_NLDEV_ATTR_DEV_NAME, name) == 0);
  if (port)
    REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_PORT_INDEX, *port) == 0);
  if (ndev)
    REQUIRE(nla_put_u32(m.get(), RDMA_NLDEV_ATTR_NDEV_INDEX, *ndev) == 0);
  if (ndev_name)
    REQUIRE(nla_put_string(m.get(), RDMA_NLDEV_ATTR_NDEV_NAME, ndev_name) == 0);
  REQUIRE(nla_put_u8(m.get(), rdma_nl::kAttrEventType, static_cast<std::uint8_t>(type)) == 0);
  return m;
}

RailDeviceView rail(const char* dev, std::optional<std::uint32_t> index, bool present,
                    int ifindex) {
  return {.device = dev, .index = index, .present = present, .ifindex = ifindex};
}

MonitorEvent event(NotifyEvent type, std::optional<std::uint32_t> dev, const char* name,
                   std::optional<std::uint32_t> ndev = std::nullopt) {
  MonitorEvent ev;
  ev.type = static_cast<std::uint8_t>(type);
  ev.dev_index = dev;
  ev.dev_name = name;
  ev.ndev_index = ndev;
  return ev;
}

}  // namespace

TEST_CASE("rdma monitor: the 6.12 uapi values, on the wire", "[daemon][rdma_monitor]") {
  // An UNREGISTER of rxe0 (index 3) byte for byte as the kernel sends it:
  // nlmsghdr (type RDMA_NL_GET_TYPE(5, 28) = 0x141c), DEV_INDEX (1),
  // DEV_NAME (2, NUL-terminated, padded to 4), EVENT_TYPE (102) = 1.
  // clang-format off
  alignas(4) std::array<std::uint8_t, 44> raw = {
      44,   0,    0,    0,    0x1c, 0x14, 0,    0,    0, 0, 0, 0, 0, 0, 0, 0,  // header
      8,    0,    1,    0,    3,    0,    0,    0,                             // DEV_INDEX 3
      9,    0,    2,    0,    'r',  'x',  'e',  '0',  0, 0, 0, 0,              // DEV_NAME
      5,    0,    0x66, 0,    1,    0,    0,    0,                             // EVENT_TYPE 1
  };
  // clang-format on
  nlmsghdr hdr;
  std::memcpy(&hdr, raw.data(), sizeof hdr);
  std::vector<std::uint8_t> buf(raw.begin(), raw.end());
  auto ev = parse_monitor_message(reinterpret_cast<const nlmsghdr*>(buf.data()));
  REQUIRE(ev);
  CHECK(ev->type == static_cast<std::uint8_t>(NotifyEvent::kUnregister));
  CHECK(ev->dev_index == 3u);
  CHECK(ev->dev_name == "rxe0");
  CHECK_FALSE(ev->port);
  CHECK_FALSE(ev->ndev_index);
  CHECK(describe(*ev) == "UNREGISTER of rxe0 (index 3)");
  CHECK(rdma_nl::kGroupNotify == 4);
  CHECK(hdr.nlmsg_type == kMonitorType);
}

TEST_CASE("rdma monitor: each event type parses with what it carries", "[daemon][rdma_monitor]") {
  auto reg = monitor_message(NotifyEvent::kRegister, 4, "rxe0");
  auto ev = parse_monitor_message(nlmsg_hdr(reg.get()));
  REQUIRE(ev);
  CHECK(monitor_event_name(ev->type) == "REGISTER");
  CHECK(ev->dev_index == 4u);

  auto att = monitor_message(NotifyEvent::kNetdevAttach, 4, "rxe0", 1, 7, "v_1");
  ev = parse_monitor_message(nlmsg_hdr(att.get()));
  REQUIRE(ev);
  CHECK(monitor_event_name(ev->type) == "NETDEV_ATTACH");
  CHECK(ev->port == 1u);
  CHECK(ev->ndev_index == 7u);
  CHECK(ev->ndev_name == "v_1");
  CHECK(describe(*ev) == "NETDEV_ATTACH of rxe0 (index 4) port 1 to v_1 (ifindex 7)");

  auto det = monitor_message(NotifyEvent::kNetdevDetach, 4, "rxe0", 1);
  ev = parse_monitor_message(nlmsg_hdr(det.get()));
  REQUIRE(ev);
  CHECK(monitor_event_name(ev->type) == "NETDEV_DETACH");
  CHECK_FALSE(ev->ndev_index);

  // A later kernel's type (RDMA_RENAME_EVENT = 4) parses; its name is its number.
  auto ren = monitor_message(static_cast<NotifyEvent>(4), 4, "mlx5_0");
  ev = parse_monitor_message(nlmsg_hdr(ren.get()));
  REQUIRE(ev);
  CHECK(monitor_event_name(ev->type) == "event 4");
}

TEST_CASE("rdma monitor: what is not a monitor event is refused", "[daemon][rdma_monitor]") {
  // Another nldev message.
  Msg other(nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0));
  REQUIRE(nla_put_u8(other.get(), rdma_nl::kAttrEventType, 0) == 0);
  CHECK_FALSE(parse_monitor_message(nlmsg_hdr(other.get())));
  CHECK_FALSE(parse_monitor_message(nullptr));
  // No EVENT_TYPE.
  Msg bare(nlmsg_alloc_simple(kMonitorType, 0));
  REQUIRE(nla_put_u32(bare.get(), RDMA_NLDEV_ATTR_DEV_INDEX, 1) == 0);
  CHECK_FALSE(parse_monitor_message(nlmsg_hdr(bare.get())));
  // A short DEV_INDEX is absent, not read past its end.
  Msg shortidx(nlmsg_alloc_simple(kMonitorType, 0));
  const std::uint8_t one = 1;
  REQUIRE(nla_put(shortidx.get(), RDMA_NLDEV_ATTR_DEV_INDEX, 1, &one) == 0);
  REQUIRE(nla_put_u8(shortidx.get(), rdma_nl::kAttrEventType, 1) == 0);
  auto ev = parse_monitor_message(nlmsg_hdr(shortidx.get()));
  REQUIRE(ev);
  CHECK_FALSE(ev->dev_index);
  // A netdev event for a netdev in another namespace: the type alone.
  Msg alone(nlmsg_alloc_simple(kMonitorType, 0));
  REQUIRE(nla_put_u8(alone.get(), rdma_nl::kAttrEventType, 2) == 0);
  ev = parse_monitor_message(nlmsg_hdr(alone.get()));
  REQUIRE(ev);
  CHECK(describe(*ev) == "NETDEV_ATTACH of ?");
}

TEST_CASE("rdma monitor: the probe reads MONITOR_MODE from SYS_GET", "[daemon][rdma_monitor]") {
  const int sys = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
  // 6.12: NETNS_MODE, COPY_ON_FORK, PRIVILEGED_QKEY_MODE, MONITOR_MODE = 1.
  Msg m612(nlmsg_alloc_simple(sys, 0));
  REQUIRE(nla_put_u8(m612.get(), RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1) == 0);
  REQUIRE(nla_put_u8(m612.get(), RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1) == 0);
  REQUIRE(nla_put_u8(m612.get(), rdma_nl::kAttrMonitorMode, 1) == 0);
  auto r = parse_sys_message(nlmsg_hdr(m612.get()));
  REQUIRE(r);
  CHECK(*r);
  // 6.1: no MONITOR_MODE.
  Msg m61(nlmsg_alloc_simple(sys, 0));
  REQUIRE(nla_put_u8(m61.get(), RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1) == 0);
  REQUIRE(nla_put_u8(m61.get(), RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1) == 0);
  r = parse_sys_message(nlmsg_hdr(m61.get()));
  REQUIRE(r);
  CHECK_FALSE(*r);
  // Not a SYS_GET reply.
  auto reg = monitor_message(NotifyEvent::kRegister, 1, "rxe0");
  CHECK_FALSE(parse_sys_message(nlmsg_hdr(reg.get())));
}

TEST_CASE("rdma monitor: UNREGISTER releases the rails of that device only",
          "[daemon][rdma_monitor]") {
  // Two rails on rxe0 (index 3, ports of one device), one on rxe1.
  const std::vector<RailDeviceView> rails = {rail("rxe0", 3, true, 7), rail("rxe0", 3, true, 7),
                                             rail("rxe1", 5, true, 9)};
  auto a = decide(event(NotifyEvent::kUnregister, 3, "rxe0"), rails);
  CHECK(a == std::vector<MonitorAction>{MonitorAction::kRelease, MonitorAction::kRelease,
                                        MonitorAction::kNone});
  // Already released by DEVICE_REMOVAL: late, counted and ignored.
  const std::vector<RailDeviceView> lost = {rail("rxe0", 3, false, 7)};
  CHECK(decide(event(NotifyEvent::kUnregister, 3, "rxe0"), lost) ==
        std::vector<MonitorAction>{MonitorAction::kLate});
  // The old device's UNREGISTER after a new rxe0 (index 6) was adopted:
  // matched by index, the new one stays.
  const std::vector<RailDeviceView> renewed = {rail("rxe0", 6, true, 7)};
  CHECK(decide(event(NotifyEvent::kUnregister, 3, "rxe0"), renewed) ==
        std::vector<MonitorAction>{MonitorAction::kNone});
  // Index unknown on our side: by name.
  const std::vector<RailDeviceView> noindex = {rail("rxe0", std::nullopt, true, 7)};
  CHECK(decide(event(NotifyEvent::kUnregister, 3, "rxe0"), noindex) ==
        std::vector<MonitorAction>{MonitorAction::kRelease});
  CHECK(decide(event(NotifyEvent::kUnregister, 4, "rxe9"), noindex) ==
        std::vector<MonitorAction>{MonitorAction::kNone});
}

TEST_CASE("rdma monitor: REGISTER and NETDEV_ATTACH adopt lost rails at once",
          "[daemon][rdma_monitor]") {
  const std::vector<RailDeviceView> rails = {rail("rxe0", std::nullopt, false, 7),
                                             rail("rxe1", 5, true, 9),
                                             rail("rxe2", std::nullopt, false, 11)};
  // REGISTER: every lost rail tries (a re-created device may have a new name).
  CHECK(decide(event(NotifyEvent::kRegister, 8, "rxe0"), rails) ==
        std::vector<MonitorAction>{MonitorAction::kAdopt, MonitorAction::kNone,
                                   MonitorAction::kAdopt});
  // NETDEV_ATTACH: the lost rail whose netdev it is.
  CHECK(decide(event(NotifyEvent::kNetdevAttach, 8, "rxe0", 7), rails) ==
        std::vector<MonitorAction>{MonitorAction::kAdopt, MonitorAction::kNone,
                                   MonitorAction::kNone});
  // Without a netdev index (another namespace's netdev): every lost rail.
  CHECK(decide(event(NotifyEvent::kNetdevAttach, 8, "rxe0"), rails) ==
        std::vector<MonitorAction>{MonitorAction::kAdopt, MonitorAction::kNone,
                                   MonitorAction::kAdopt});
  // NETDEV_DETACH and unknown types: nothing (the async events and
  // rtnetlink see what they mean).
  CHECK(decide(event(NotifyEvent::kNetdevDetach, 5, "rxe1"), rails) ==
        std::vector<MonitorAction>(3, MonitorAction::kNone));
  CHECK(decide(event(static_cast<NotifyEvent>(5), 5, "rxe1"), rails) ==
        std::vector<MonitorAction>(3, MonitorAction::kNone));
}

}  // namespace daemon_rdma_monitor_test
