// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The RDMA netlink (NETLINK_RDMA, nldev) values of Linux 6.12 that Debian
// 12's <rdma/rdma_netlink.h> (Linux 6.1) lacks: the device monitor
// (RDMA_NLDEV_CMD_MONITOR on RDMA_NL_GROUP_NOTIFY). Values from the kernel's
// include/uapi/rdma/rdma_netlink.h of 6.12, whose enums are ABI (appended
// to, never renumbered); the names are the header's, so that a reader can
// find them there. The only place in the tree that spells these numbers.
#include <rdma/rdma_netlink.h>

#include <cstdint>

namespace rcnet::daemon::rdma_nl {

// enum { RDMA_NL_GROUP_IWPM = 2, RDMA_NL_GROUP_LS, RDMA_NL_GROUP_NOTIFY }.
inline constexpr int kGroupNotify = 4;  // RDMA_NL_GROUP_NOTIFY

// enum rdma_nldev_command: ... RDMA_NLDEV_CMD_STAT_GET_STATUS (24, the last
// in 6.1), RDMA_NLDEV_CMD_RES_SRQ_GET_RAW, RDMA_NLDEV_CMD_NEWDEV,
// RDMA_NLDEV_CMD_DELDEV, RDMA_NLDEV_CMD_MONITOR.
inline constexpr int kCmdMonitor = 28;  // RDMA_NLDEV_CMD_MONITOR
static_assert(RDMA_NLDEV_CMD_STAT_GET_STATUS + 4 == kCmdMonitor);

// enum rdma_nldev_attr: ... RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC (95, the
// last in 6.1), PRIVILEGED_QKEY_MODE, DRIVER_DETAILS, RES_SUBTYPE, DEV_TYPE,
// PARENT_NAME, NAME_ASSIGN_TYPE, EVENT_TYPE, SYS_ATTR_MONITOR_MODE.
inline constexpr int kAttrEventType = 102;    // RDMA_NLDEV_ATTR_EVENT_TYPE, u8
inline constexpr int kAttrMonitorMode = 103;  // RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, u8
static_assert(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC + 7 == kAttrEventType);
// The highest attribute the monitor's parsers read.
inline constexpr int kMonitorMaxAttr = kAttrMonitorMode;

// enum rdma_nl_notify_event_type (RDMA_NLDEV_ATTR_EVENT_TYPE). Later
// kernels add RDMA_RENAME_EVENT (4) and RDMA_NETDEV_RENAME_EVENT (5).
enum class NotifyEvent : std::uint8_t {
  kRegister = 0,      // RDMA_REGISTER_EVENT: DEV_INDEX, DEV_NAME
  kUnregister = 1,    // RDMA_UNREGISTER_EVENT: DEV_INDEX, DEV_NAME
  kNetdevAttach = 2,  // RDMA_NETDEV_ATTACH_EVENT: + PORT_INDEX, NDEV_INDEX, NDEV_NAME
  kNetdevDetach = 3,  // RDMA_NETDEV_DETACH_EVENT: DEV_INDEX, DEV_NAME, PORT_INDEX
};

}  // namespace rcnet::daemon::rdma_nl
