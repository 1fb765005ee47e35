// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl/views.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include "config/keys.hpp"
#include "util/log.hpp"

namespace rcnet::ctl {

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// --- The read commands -----------------------------------------------------------------

namespace {
json optional_ms(const std::optional<Duration>& d) {
  return d ? json(to_ms(*d)) : json(nullptr);
}
}  // namespace

json status_json(const cm::Snapshot& s) {
  json states = json::object();
  for (int i = 0; i < cm::kConnStateCount; ++i) {
    states[std::string(cm::to_string(static_cast<cm::ConnState>(i)))] = 0;
  }
  std::size_t in_service = 0;
  std::size_t established = 0;
  std::size_t teardown = 0;
  for (const cm::QpSnapshot& q : s.qps) {
    auto& n = states[std::string(cm::to_string(q.state))];
    n = n.get<std::uint64_t>() + 1;
    if (q.in_service)
      ++in_service;
    if (q.state == cm::ConnState::kEstablished)
      ++established;
    if (cm::is_teardown(q.state))
      ++teardown;
  }
  // Snapshot::peers has one entry per peer per rail.
  std::set<NodeId> peers;
  for (const cm::PeerSnapshot& p : s.peers)
    peers.insert(p.node);
  json rails = rails_json(s);
  return {
      {"node", s.node},
      {"incarnation", hex64(s.incarnation)},
      {"local", s.local.to_string()},
      {"device", s.device},
      {"device_removed", s.device_removed},
      {"mtu", s.mtu},
      {"offload", s.offload},
      {"transport", s.transport},
      {"framing", s.header ? "header" : "immediate"},
      {"credits", s.credits},
      {"max_connections", s.max_connections},
      {"peers", peers.size()},
      {"qps", s.qps.size()},
      {"connections", in_service},
      {"established", established},
      {"in_teardown", teardown},
      {"states", std::move(states)},
      {"send_slots", {{"total", s.send_slots_total}, {"free", s.send_slots_free}}},
      {"srq", srq_json(s.srq)},
      {"rails_mode", std::move(rails["mode"])},
      {"peers_without_redundancy", s.peers_without_redundancy},
      {"rails", std::move(rails["rails"])},
  };
}

std::vector<cm::RailSnapshot> rails_of(const cm::Snapshot& s) {
  if (!s.rails.empty())
    return s.rails;
  cm::RailSnapshot r;
  r.local = s.local;
  r.device = s.device;
  r.state = s.device_removed ? cm::RailState::kRemoved : cm::RailState::kUp;
  r.removed_by = s.device_removed_by;
  r.readopted_by = s.device_readopted_by;
  for (const cm::QpSnapshot& q : s.qps) {
    if (q.in_service)
      ++r.links;
  }
  r.carrying = r.links;  // one rail carries every peer's traffic
  r.tx_packets = s.counters.packets_tx;
  r.tx_bytes = s.counters.bytes_tx;
  r.rx_packets = s.counters.packets_rx;
  r.rx_bytes = s.counters.bytes_rx;
  return {r};
}

json rail_json(const cm::RailSnapshot& r) {
  return {
      {"rail", r.index},
      {"address", r.local.addr.to_string()},
      {"port", r.local.port},
      {"device", r.device},
      {"device_port", r.port},
      {"state", std::string(cm::to_string(r.state))},
      {"cause", r.cause},
      {"since_change_ms", to_ms(r.since_change)},
      {"holddown_ms", to_ms(r.holddown)},
      {"flaps", r.flaps},
      {"links", r.links},
      {"carrying", r.carrying},
      // Which path noticed the last device loss and return ("netlink
      // monitor", "async event", "poll"); null: none since start.
      {"removed_by", r.removed_by.empty() ? json(nullptr) : json(r.removed_by)},
      {"readopted_by", r.readopted_by.empty() ? json(nullptr) : json(r.readopted_by)},
      {"tx_packets", r.tx_packets},
      {"tx_bytes", r.tx_bytes},
      {"rx_packets", r.rx_packets},
      {"rx_bytes", r.rx_bytes},
  };
}

json rails_json(const cm::Snapshot& s) {
  json arr = json::array();
  for (const cm::RailSnapshot& r : rails_of(s)) {
    json j = rail_json(r);
    if (s.rails.empty())
      j["since_change_ms"] = nullptr;  // a bare Manager does not know when it changed
    arr.push_back(std::move(j));
  }
  return {
      {"mode", s.rails_mode},
      {"peers_without_redundancy", s.peers_without_redundancy},
      {"rails", std::move(arr)},
  };
}

namespace {

// A peer's overlay addresses in tun.address's family order: what its
// private data said (`said`), and with both families on the TUN the
// other's by the config's mapping of its underlay on `rail`.
json overlays_of(const IpAddr& said, const IpAddr& underlay, std::size_t rail,
                 const config::Config* c) {
  json arr = json::array();
  if (c == nullptr || !c->tun_address6) {
    if (!said.empty())
      arr.push_back(said.to_string());
    return arr;
  }
  for (const IpPrefix& p : c->overlay_prefixes()) {
    std::optional<IpAddr> a;
    if (said.family == p.addr.family)
      a = said;
    else
      a = c->overlay_for(underlay, rail, p.addr.family);
    if (a)
      arr.push_back(a->to_string());
  }
  return arr;
}

}  // namespace

json peers_json(const cm::Snapshot& s, const config::Config* c) {
  json arr = json::array();
  for (const cm::PeerSnapshot& p : s.peers) {
    json state = nullptr;
    json auth = nullptr;
    json key_id = nullptr;
    for (const cm::QpSnapshot& q : s.qps) {
      // Connection ids are unique per rail only.
      if (p.conn_id != 0 && q.id == p.conn_id && q.rail == p.rail) {
        state = std::string(cm::to_string(q.state));
        auth = std::string(q.auth);
        key_id = q.auth_key_id == 0 ? json(nullptr) : json(q.auth_key_id);
      }
    }
    arr.push_back({
        {"node", p.node},
        {"rail", p.rail},
        {"underlay", p.underlay.to_string()},
        {"overlay", p.overlay.empty() ? json(nullptr) : json(p.overlay.to_string())},
        {"overlays", overlays_of(p.overlay, p.underlay.addr, p.rail, c)},
        {"incarnation", p.incarnation == 0 ? json(nullptr) : json(hex64(p.incarnation))},
        {"queue_depth", p.queue_depth},
        {"conn_id", p.conn_id},
        {"state", std::move(state)},
        {"auth", std::move(auth)},
        {"key_id", std::move(key_id)},
        // Without rails (a bare Manager) its one link carries whatever it has.
        {"carries", s.rails.empty() ? p.conn_id != 0 : p.carries},
        {"attempts", p.attempts},
        {"last_attempt_ms", optional_ms(p.since_attempt)},
        {"last_result", p.last_result.empty() ? json(nullptr) : json(p.last_result)},
        {"last_result_ms", optional_ms(p.since_result)},
        {"next_retry_ms", optional_ms(p.retry_in)},
    });
  }
  return {{"peers", std::move(arr)}};
}

json qp_json(const cm::QpSnapshot& q) {
  return {
      {"id", q.id},
      {"rail", q.rail},
      {"peer_node", q.peer_node},
      {"peer_addr", q.peer_addr.to_string()},
      {"qpn", q.qpn},
      {"remote_qpn", q.remote_qpn},
      {"state", std::string(cm::to_string(q.state))},
      {"active", q.active},
      {"in_service", q.in_service},
      {"offload", q.offload},
      {"framing", q.header ? "header" : "immediate"},
      {"peer_credits", q.peer_grant},
      {"tx_credits", q.tx_credits},
      {"credits_owed", q.credits_owed},
      {"time_in_state_ms", to_ms(q.time_in_state)},
      {"age_ms", to_ms(q.age)},
      {"idle_ms", to_ms(q.idle)},
      {"tx_packets", q.tx_packets},
      {"tx_bytes", q.tx_bytes},
      {"rx_packets", q.rx_packets},
      {"rx_bytes", q.rx_bytes},
      {"teardown_reason", q.teardown_reason},
      // The peer proof (docs/design.md "Trust"): off, awaiting, proven, unproven.
      {"auth", std::string(q.auth)},
      {"key_id", q.auth_key_id == 0 ? json(nullptr) : json(q.auth_key_id)},
  };
}

json qps_json(const cm::Snapshot& s) {
  json arr = json::array();
  for (const cm::QpSnapshot& q : s.qps)
    arr.push_back(qp_json(q));
  return {{"qps", std::move(arr)}};
}

json connections_json(const cm::Snapshot& s, const config::Config* c) {
  json arr = json::array();
  for (const cm::QpSnapshot& q : s.qps) {
    if (!q.in_service)
      continue;
    json j = qp_json(q);
    j["overlay"] = nullptr;
    j["overlays"] = overlays_of(IpAddr{}, q.peer_addr.addr, q.rail, c);
    for (const cm::PeerSnapshot& p : s.peers) {
      if (p.node == q.peer_node && !p.overlay.empty()) {
        j["overlay"] = p.overlay.to_string();
        j["overlays"] = overlays_of(p.overlay, q.peer_addr.addr, q.rail, c);
      }
    }
    arr.push_back(std::move(j));
  }
  return {{"connections", std::move(arr)}};
}

json srq_json(const cm::SrqSnapshot& s) {
  return {
      {"enabled", s.enabled},
      {"size", s.size},
      {"posted", s.posted},
      {"limit", s.limit},
      {"limit_events", s.limit_events},
      {"buffer_size", s.buffer_size},
  };
}

json stats_json(const cm::Counters& c) {
  return {{"counters", counters_json(c)}};
}

json histogram_json(const cm::Histogram& h) {
  return {{"bounds_s", cm::Histogram::kBounds},
          {"le", h.le},
          {"count", h.count},
          {"sum_s", h.sum_seconds}};
}

json stats_json(const cm::Snapshot& s) {
  json j = stats_json(s.counters);
  j["histograms"] = {{"connect_time", histogram_json(s.connect_time)},
                     {"teardown_time", histogram_json(s.teardown_time)}};
  return j;
}

namespace {

// A config::Value as JSON: the same types, unset as null.
json value_json(const config::Value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, std::vector<config::InlineTable>>) {
          json arr = json::array();
          for (const config::InlineTable& t : x) {
            json o = json::object();
            for (const auto& [k, val] : t)
              o[k] = val;
            arr.push_back(std::move(o));
          }
          return arr;
        } else {
          return x;
        }
      },
      v);
}

}  // namespace

json config_json(const config::Config& c) {
  json out = json::object();
  for (const config::Key& k : config::keys())
    out[std::string(k.dotted)] = value_json(k.get(c));
  return out;
}

json route_json(const IpAddr& dst, const config::Config& c, const cm::Snapshot& s) {
  json j = {{"address", dst.to_string()}, {"node", nullptr},   {"overlay", nullptr},
            {"overlays", json::array()},  {"rail", nullptr},   {"underlay", nullptr},
            {"state", nullptr},           {"reason", nullptr}, {"rails", json::array()}};
  const IpPrefix* tun = c.overlay_prefix_for(dst);
  if (tun != nullptr && dst == tun->addr) {
    j["reason"] = dst.to_string() + " is this node's own overlay address (tun.address)";
    return j;
  }
  if (tun == nullptr || !tun->contains(dst)) {
    std::string prefixes;
    for (const IpPrefix& p : c.overlay_prefixes())
      prefixes += (prefixes.empty() ? "" : ", ") + p.to_string();
    j["reason"] = "not on the overlay (tun.address " + prefixes +
                  "): the kernel does not route it into " + c.tun_name;
    return j;
  }
  const std::size_t rails = std::max<std::size_t>(c.rail_count(), 1);
  const auto rail0 = c.peer_endpoint_for(dst, 0);
  if (!rail0) {
    j["reason"] = c.underlay_prefix
                      ? "no peer: the overlay's subnet or broadcast address (no peer owns it)"
                      : "no peer: not in peers.static, and peers.underlay_prefix is unset";
    return j;
  }
  if (rail0->addr == c.manager.local.addr) {
    j["reason"] = "maps to this node's own underlay address " + rail0->addr.to_string();
    return j;
  }
  j["node"] = node_id_for(rail0->addr);
  j["overlay"] = dst.to_string();
  for (const IpPrefix& p : c.overlay_prefixes()) {
    if (p.addr.family == dst.family)
      j["overlays"].push_back(dst.to_string());
    else if (const auto o = c.overlay_for(rail0->addr, 0, p.addr.family))
      j["overlays"].push_back(o->to_string());
  }
  std::optional<std::size_t> carrier, first_up;
  for (std::size_t k = 0; k < rails; ++k) {
    const auto ep = c.peer_endpoint_for(dst, k);
    json r = {{"rail", k},
              {"underlay", ep ? json(ep->to_string()) : json(nullptr)},
              {"state", nullptr},
              {"carries", false}};
    for (const cm::PeerSnapshot& p : s.peers) {
      if (!ep || p.rail != k || !(p.underlay == *ep))
        continue;
      for (const cm::QpSnapshot& q : s.qps) {
        if (p.conn_id != 0 && q.id == p.conn_id && q.rail == p.rail)
          r["state"] = std::string(cm::to_string(q.state));
      }
      r["carries"] = s.rails.empty() ? p.conn_id != 0 : p.carries;
      if (r["carries"].get<bool>() && !carrier)
        carrier = k;
    }
    const bool rail_up = s.rails.size() <= k || s.rails[k].state == cm::RailState::kUp;
    if (ep && rail_up && !first_up)
      first_up = k;
    j["rails"].push_back(std::move(r));
  }
  const std::optional<std::size_t> k = carrier ? carrier : first_up;
  if (!k) {
    j["reason"] = "no rail is up toward it (rcnetctl rails)";
    return j;
  }
  j["rail"] = *k;
  j["underlay"] = j["rails"][*k]["underlay"];
  j["state"] = j["rails"][*k]["state"];
  if (carrier)
    j["reason"] = nullptr;
  else if (j["state"].is_null())
    j["reason"] = "no connection yet: the first packet makes one";
  else
    j["reason"] = "its connection is being set up";
  return j;
}

json disconnect_json(NodeId node) {
  return {{"disconnected", node}};
}

json reload_json(const std::vector<std::string>& applied) {
  return {{"applied", applied}};
}

json reap_json(std::size_t reaped) {
  return {{"reaped", reaped}};
}

json log_level_json(config::LogLevel previous, config::LogLevel now) {
  return {{"previous", std::string(config::to_string(previous))},
          {"level", std::string(config::to_string(now))}};
}

json audit_json(const AuditResult& a) {
  return {
      {"ok", a.ok()},
      {"daemon_qps", a.daemon_count},
      {"kernel_qps", a.kernel_count},
      {"kernel_only", a.kernel_only},
      {"daemon_only", a.daemon_only},
  };
}

namespace {

// The teardown's journal MESSAGE_ID as a word a monitor can show and match.
std::string_view cause_name(std::string_view message_id) {
  if (message_id.empty())
    return "";
  for (const log::MessageIdName& m : log::kMessageIdNames) {
    if (m.id == message_id)
      return m.name;
  }
  return "other";
}

}  // namespace

json event_json(const cm::Event& e, std::int64_t wall_ms) {
  // A rail's events concern no one connection: no conn, QPN or QP state.
  if (e.kind == cm::EventKind::kRail) {
    return {{"kind", "rail"},
            {"time_ms", wall_ms},
            {"rail", e.rail},
            {"state", std::string(e.reason)},
            {"cause", std::string(e.detail)}};
  }
  if (e.kind == cm::EventKind::kFailover) {
    return {{"kind", "failover"},
            {"time_ms", wall_ms},
            {"peer_node", e.peer},
            {"peer_addr", e.peer_addr.to_string()},
            {"from_rail", e.from_rail},
            {"rail", e.rail},
            {"reason", std::string(e.reason)},
            {"cause", std::string(e.detail)}};
  }
  json j = {
      {"kind", std::string(cm::to_string(e.kind))},
      {"time_ms", wall_ms},
      {"rail", e.rail},
      {"conn", e.conn},
      {"peer_node", e.peer},
      {"peer_addr", e.peer_addr.to_string()},
      {"qpn", e.qpn},
      {"remote_qpn", e.remote_qpn},
      {"to", std::string(cm::to_string(e.to))},
      {"reason", std::string(e.reason)},
  };
  switch (e.kind) {
    case cm::EventKind::kState:
      j["from"] = std::string(cm::to_string(e.from));
      break;
    case cm::EventKind::kTeardown:
      j["cause"] = std::string(cause_name(e.message_id));
      break;
    case cm::EventKind::kReject:
      j.erase("to");  // no connection, no state
      j["detail"] = std::string(e.detail);
      break;
    case cm::EventKind::kEvict:
    case cm::EventKind::kRail:      // returned above
    case cm::EventKind::kFailover:  // returned above
      break;
  }
  return j;
}

}  // namespace rcnet::ctl
