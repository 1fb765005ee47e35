// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Structured logging. Every connection event is logged through spdlog with a
// set of journal fields attached (PEER_NODE, PEER_ADDR, QPN, REMOTE_QPN,
// CONN_STATE, TEARDOWN_STAGE, REASON, MESSAGE_ID), so that
// `journalctl PEER_ADDR=10.99.0.2` works. spdlog sinks only see text, so the
// fields travel beside the message: log::event() publishes them for the
// duration of the call and a journal sink reads log::current_fields().
// Single-threaded by design (docs/design.md "Why it exists", item 3): the pointer is a plain
// global.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "util/address.hpp"

namespace rcnet::log {

struct Fields {
  std::uint64_t peer_node = 0;  // 0 = not set
  IpAddr peer_addr;             // underlay IP address (no port), empty() = not set
  std::uint16_t peer_port = 0;  // underlay port (rcnet's rdma_cm port), 0 = not set
  std::uint32_t qpn = 0;
  std::uint32_t remote_qpn = 0;
  std::string_view conn_state;      // QP state name
  std::string_view teardown_stage;  // set only in teardown
  std::string reason;
  std::string_view message_id;  // one of the ids below, "" = none
  int rail = -1;                // the rail (cm/rails.hpp) a record is about, -1 = not set
};

// The fields of the record being logged right now, or nullptr.
const Fields* current_fields();

namespace detail {
void set_current(const Fields* f);
}

// Logs `fmt` at `level` on the default logger with `fields` attached.
template <class... Args>
void event(spdlog::level::level_enum level, const Fields& fields,
           spdlog::format_string_t<Args...> fmt, Args&&... args) {
  auto* logger = spdlog::default_logger_raw();
  if (!logger->should_log(level))
    return;
  detail::set_current(&fields);
  logger->log(level, fmt, std::forward<Args>(args)...);
  detail::set_current(nullptr);
}

// MESSAGE_IDs (sd-id128 format) of the events operators search for. The
// journal catalog (systemd/rcnet.catalog) documents each one.
inline constexpr std::string_view kMsgPeerConnected = "1be423a4d7e84e709fee54138a3b67e6";
inline constexpr std::string_view kMsgPeerDisconnected = "ef135e2eff914706ac9ac649886102a1";
inline constexpr std::string_view kMsgReapedIdle = "cb9dcd6de3e74242bf7c5ae3f3d7b90d";
inline constexpr std::string_view kMsgReapedDead = "b531331c2bfd40258c5b0fc24f99eb35";
inline constexpr std::string_view kMsgRestartDetected = "9045302313c24bcab80b579eb191c17b";
inline constexpr std::string_view kMsgCollisionMerged = "12829befa121449db23244deeb71d4e1";
inline constexpr std::string_view kMsgLastWqeTimeout = "a8bdde38780e488bb2e82e499ffc1141";
inline constexpr std::string_view kMsgForcedDestroy = "505d15fe55d441d18c9305368757868d";
inline constexpr std::string_view kMsgDeviceRemoved = "3c5e1f0a9b7d4e2c8f61a2d4b6e8c0f3";
inline constexpr std::string_view kMsgDeviceReadopted = "7d2b9e4c1a6f48b0a3c5e7f9d1b3a5c7";
inline constexpr std::string_view kMsgRailDown = "a80fa0faf59243cb8f467df2cf2be25a";
inline constexpr std::string_view kMsgRailUp = "ed196261187c49888ce4326988d3347d";
inline constexpr std::string_view kMsgRailFailover = "bacb8f2df5624fbdb598f01af4bbf6b8";
// A connection attempt failed (address/route error, connect timeout, REJ).
inline constexpr std::string_view kMsgConnectFailed = "af7cec8ee0d14aa5be4936c0fa266231";

// A short word for each id, as the ctl monitor's teardown "cause" shows it
// (lib/ctl/views.cpp event_json) and rcnetctl(8) documents it.
struct MessageIdName {
  std::string_view id;
  std::string_view name;
};
inline constexpr MessageIdName kMessageIdNames[] = {
    {kMsgPeerConnected, "peer_connected"},
    {kMsgPeerDisconnected, "peer_disconnected"},
    {kMsgReapedIdle, "reaped_idle"},
    {kMsgReapedDead, "reaped_dead"},
    {kMsgRestartDetected, "restart_detected"},
    {kMsgCollisionMerged, "collision_merged"},
    {kMsgLastWqeTimeout, "last_wqe_timeout"},
    {kMsgForcedDestroy, "forced_destroy"},
    {kMsgDeviceRemoved, "device_removed"},
    {kMsgDeviceReadopted, "device_readopted"},
    {kMsgRailDown, "rail_down"},
    {kMsgRailUp, "rail_up"},
    {kMsgRailFailover, "rail_failover"},
    {kMsgConnectFailed, "connect_failed"},
};

}  // namespace rcnet::log

// Addresses as log arguments: formatted only when the record is emitted, so a
// disabled level costs no inet_ntop (a connection's state change logs at
// debug; eager to_string() calls were most of the manager fuzzer's time).
template <>
struct fmt::formatter<rcnet::IpAddr> : fmt::formatter<std::string_view> {
  auto format(const rcnet::IpAddr& a, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(a.to_string(), ctx);
  }
};
template <>
struct fmt::formatter<rcnet::Endpoint> : fmt::formatter<std::string_view> {
  auto format(const rcnet::Endpoint& e, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(e.to_string(), ctx);
  }
};
