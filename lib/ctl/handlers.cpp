// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The handlers the rows of kCommands (commands.hpp) name, in the table's
// order: each reads what it needs from the Backend (handlers.hpp) and
// answers with a reply line whose data is a view (views.hpp).
#include "ctl/handlers.hpp"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "ctl/views.hpp"

namespace rcnet::ctl {

namespace {

json append_counters(json stats, const json& extra) {
  if (!stats.contains("counters") || !stats["counters"].is_array() || !extra.is_array())
    return stats;
  for (const json& c : extra)
    stats["counters"].push_back(c);
  return stats;
}

Handled ok(const json& data) {
  return {ok_reply(data)};
}

}  // namespace

Handled handle_status(const Request&, Context& ctx) {
  json data = status_json(ctx.backend.snapshot());
  data["daemon"] = ctx.backend.daemon_status();
  return ok(data);
}

Handled handle_rails(const Request&, Context& ctx) {
  return ok(rails_json(ctx.backend.snapshot()));
}

Handled handle_peers(const Request&, Context& ctx) {
  return ok(peers_json(ctx.backend.snapshot(), &ctx.backend.config()));
}

Handled handle_connections(const Request&, Context& ctx) {
  return ok(connections_json(ctx.backend.snapshot(), &ctx.backend.config()));
}

Handled handle_qps(const Request&, Context& ctx) {
  return ok(qps_json(ctx.backend.snapshot()));
}

Handled handle_srq(const Request&, Context& ctx) {
  return ok(srq_json(ctx.backend.snapshot().srq));
}

Handled handle_stats(const Request&, Context& ctx) {
  json data = append_counters(stats_json(ctx.backend.snapshot()), ctx.backend.daemon_counters());
  if (ctx.server_counters)
    data = append_counters(std::move(data), ctx.server_counters());
  return ok(data);
}

Handled handle_audit(const Request&, Context& ctx) {
  auto a = ctx.backend.audit();
  if (!a)
    return {error_reply(ErrorCode::kFailed, "audit: " + a.error().message())};
  return ok(*a);
}

Handled handle_config(const Request&, Context& ctx) {
  return ok(config_json(ctx.backend.config()));
}

Handled handle_disconnect(const Request& req, Context& ctx) {
  Backend& b = ctx.backend;
  std::optional<NodeId> node = req.peer_node;
  std::string name;
  if (node) {
    name = fmt::format("node {}", *node);
  } else if (req.peer_addr) {
    // The underlay address, or the overlay address operators ping.
    const IpAddr& a = *req.peer_addr;
    name = a.to_string();
    for (const cm::PeerSnapshot& p : b.snapshot().peers) {
      if (p.underlay.addr == a || (!p.overlay.empty() && p.overlay == a))
        node = p.node;
    }
    // Not in the table: an overlay address maps to its peer's underlay
    // (peers.static, peers.underlay_prefix), whose id is derived from it.
    if (!node) {
      const auto underlay = b.config().underlay_for(a);
      node = node_id_for(underlay ? *underlay : a);
    }
  }
  if (!node || !b.disconnect(*node, "rcnetctl disconnect"))
    return {error_reply(ErrorCode::kFailed, "no peer " + name)};
  return ok(disconnect_json(*node));
}

Handled handle_reap(const Request& req, Context& ctx) {
  const Duration idle = req.reap_idle.value_or(ctx.backend.config().manager.idle_timeout);
  return ok(reap_json(ctx.backend.reap(idle)));
}

Handled handle_log_level(const Request& req, Context& ctx) {
  const config::LogLevel previous = ctx.backend.log_level();
  ctx.backend.set_log_level(req.level);
  return ok(log_level_json(previous, req.level));
}

// The ctl server makes the client a subscriber (daemon/ctl_server.hpp).
Handled handle_monitor(const Request&, Context&) {
  return {ok_reply({{"monitor", true}}), false, true};
}

Handled handle_reload(const Request&, Context& ctx) {
  auto r = ctx.backend.reload();
  if (!r)
    return {error_reply(ErrorCode::kFailed, r.error().context)};
  return ok(reload_json(*r));
}

Handled handle_route(const Request& req, Context& ctx) {
  if (!req.address)
    return {error_reply(ErrorCode::kBadRequest, "route needs an address"), true};
  return ok(route_json(*req.address, ctx.backend.config(), ctx.backend.snapshot()));
}

}  // namespace rcnet::ctl
