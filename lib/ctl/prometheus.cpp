// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// render_prometheus: the text exposition format for node-exporter's
// textfile collector (render.hpp).
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctl/json_fields.hpp"
#include "ctl/render.hpp"

namespace rcnet::ctl {

using detail::array_of;
using detail::count;
using detail::field;
using detail::text;

namespace {

// Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; HELP text escapes '\\'
// and newlines (exposition format 0.0.4).
std::string prom_name(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == ':';
    out += ok ? ch : '_';
  }
  return out;
}
std::string prom_help(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}
// A label value: '\\', '"' and newlines escaped.
std::string prom_label(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"')
      out += '\\';
    if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}
void prom_metric(std::string& out, const std::string& name, const char* type,
                 std::string_view help) {
  out += "# HELP " + name + " " + prom_help(help) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

// Counter names (cm::Counters, the daemon's TunCounters and CtlCounters, as
// "stats" has them) to Prometheus metrics, <ns>_<what>_<unit>_total: one row
// per counter. Rows that share a metric are one family told apart by one
// label (reason or kind), whose sum() is meaningful: the label splits one
// total, never counts a thing twice. A counter without a row becomes
// rcnet_<name>_total, or for drops_<why> a reason of
// rcnet_dropped_packets_total; rcnetctl(8) METRICS lists every family.
struct MetricRow {
  std::string_view counter;  // the counter's name in "stats"
  std::string_view metric;   // its family
  std::string_view label;    // "" for a family of one counter
  std::string_view value;
};
constexpr std::string_view kDropped = "rcnet_dropped_packets_total";
constexpr MetricRow kMetricRows[] = {
    {"connects_started", "rcnet_connect_attempts_total", "", ""},
    {"connects_established", "rcnet_connections_established_total", "", ""},
    {"connect_failures", "rcnet_connect_failures_total", "", ""},
    {"accepts", "rcnet_reqs_accepted_total", "", ""},
    {"rejects_sent_collision", "rcnet_rejs_sent_total", "reason", "collision"},
    {"rejects_sent_duplicate", "rcnet_rejs_sent_total", "reason", "duplicate"},
    {"rejects_sent_full", "rcnet_rejs_sent_total", "reason", "full"},
    {"rejects_sent_version", "rcnet_rejs_sent_total", "reason", "version"},
    {"rejects_sent_not_allowed", "rcnet_rejs_sent_total", "reason", "not_allowed"},
    {"rejects_sent_shutting_down", "rcnet_rejs_sent_total", "reason", "shutting_down"},
    {"rejects_sent_malformed", "rcnet_rejs_sent_total", "reason", "malformed"},
    {"rejects_sent_busy", "rcnet_rejs_sent_total", "reason", "busy"},
    {"rejects_received", "rcnet_rejs_received_total", "", ""},
    {"rejects_received_busy", "rcnet_rejs_received_busy_total", "", ""},
    {"connects_paced", "rcnet_connects_paced_total", "", ""},
    {"collisions_merged", "rcnet_collisions_merged_total", "", ""},
    {"restarts_detected", "rcnet_peer_restarts_total", "", ""},
    {"stale_replaced", "rcnet_stale_connections_replaced_total", "", ""},
    {"malformed_private_data", "rcnet_malformed_private_data_total", "", ""},
    {"last_wqe_received", "rcnet_last_wqe_events_total", "", ""},
    {"last_wqe_timeouts", "rcnet_last_wqe_timeouts_total", "", ""},
    {"drains_completed", "rcnet_drains_completed_total", "", ""},
    {"last_wqe_skipped", "rcnet_teardown_waits_skipped_total", "wait", "last_wqe"},
    {"drains_skipped", "rcnet_teardown_waits_skipped_total", "wait", "drain"},
    {"drain_timeouts", "rcnet_drain_timeouts_total", "", ""},
    {"forced_destroys", "rcnet_forced_destroys_total", "", ""},
    {"slow_destroys", "rcnet_slow_destroys_total", "", ""},
    {"flushed_recvs_counted", "rcnet_flushed_receives_total", "", ""},
    {"qps_created", "rcnet_qps_created_total", "", ""},
    {"qps_destroyed", "rcnet_qps_destroyed_total", "", ""},
    {"cm_ids_created", "rcnet_cm_ids_created_total", "", ""},
    {"cm_ids_destroyed", "rcnet_cm_ids_destroyed_total", "", ""},
    {"idle_reaps", "rcnet_reaped_connections_total", "reason", "idle"},
    {"dead_peer_reaps", "rcnet_reaped_connections_total", "reason", "dead_peer"},
    {"neighbour_failed_stale", "rcnet_neighbour_failed_stale_total", "", ""},
    {"link_down_teardowns", "rcnet_reaped_connections_total", "reason", "link_down"},
    {"evictions", "rcnet_reaped_connections_total", "reason", "evicted"},
    {"evictions_refused", "rcnet_evictions_refused_total", "", ""},
    {"reaper_visits", "rcnet_reaper_visits_total", "", ""},
    {"qp_fatal_events", "rcnet_qp_fatal_events_total", "", ""},
    {"async_events_ignored", "rcnet_events_ignored_total", "kind", "async"},
    {"cm_events_ignored", "rcnet_events_ignored_total", "kind", "rdma_cm"},
    {"completions_ignored", "rcnet_events_ignored_total", "kind", "completion"},
    {"srq_limit_events", "rcnet_srq_limit_events_total", "", ""},
    {"packets_tx", "rcnet_tx_packets_total", "", ""},
    {"bytes_tx", "rcnet_tx_bytes_total", "", ""},
    {"packets_rx", "rcnet_rx_packets_total", "", ""},
    {"bytes_rx", "rcnet_rx_bytes_total", "", ""},
    {"send_errors", "rcnet_send_errors_total", "", ""},
    {"recv_errors", "rcnet_receive_errors_total", "", ""},
    {"drops_queue_full", kDropped, "reason", "queue_full"},
    {"drops_oversize", kDropped, "reason", "oversize"},
    {"drops_connect_failed", kDropped, "reason", "connect_failed"},
    {"drops_no_slot", kDropped, "reason", "no_slot"},
    {"drops_shutting_down", kDropped, "reason", "shutting_down"},
    {"drops_gso_to_legacy_peer", kDropped, "reason", "gso_to_legacy_peer"},
    {"gso_sent", "rcnet_gso_sent_packets_total", "", ""},
    {"credit_waits", "rcnet_credit_waits_total", "", ""},
    {"credit_updates", "rcnet_credit_updates_total", "", ""},
    {"sends_zero_copy", "rcnet_zero_copy_sends_total", "", ""},
    {"send_doorbells", "rcnet_send_doorbells_total", "", ""},
    {"gso_segmented", "rcnet_gso_segmented_packets_total", "", ""},
    {"uso_segmented", "rcnet_uso_segmented_packets_total", "", ""},
    {"comm_est_notified", "rcnet_comm_est_notified_total", "", ""},
    {"connect_deadlines_deferred", "rcnet_connect_deadlines_deferred_total", "", ""},
    {"device_removals", "rcnet_device_removals_total", "", ""},
    {"device_readopts", "rcnet_device_readopts_total", "", ""},
    // Which path noticed first (docs/design.md "Device loss and return").
    {"device_removals_async", "rcnet_device_removals_noticed_total", "path", "async_event"},
    {"device_removals_monitor", "rcnet_device_removals_noticed_total", "path", "netlink_monitor"},
    {"device_readopts_monitor", "rcnet_device_readopts_noticed_total", "path", "netlink_monitor"},
    {"device_readopts_poll", "rcnet_device_readopts_noticed_total", "path", "poll"},
    {"device_notices_late", "rcnet_device_notices_late_total", "", ""},
    {"illegal_transitions", "rcnet_illegal_transitions_total", "", ""},
    // The rails' (cm RCNET_RAIL_COUNTERS).
    {"failovers_port_error", "rcnet_failovers_total", "cause", "port_error"},
    {"failovers_device_lost", "rcnet_failovers_total", "cause", "device_lost"},
    {"failovers_carrier", "rcnet_failovers_total", "cause", "carrier"},
    {"failovers_retry_exceeded", "rcnet_failovers_total", "cause", "retry_exceeded"},
    {"failovers_peer_notice", "rcnet_failovers_total", "cause", "peer_notice"},
    {"failovers_link_lost", "rcnet_failovers_total", "cause", "link_lost"},
    {"failbacks", "rcnet_failbacks_total", "", ""},
    {"failover_resent", "rcnet_failover_resent_packets_total", "", ""},
    {"failover_queue_moved", "rcnet_failover_moved_packets_total", "", ""},
    {"failover_no_link", kDropped, "reason", "failover_no_link"},
    {"rail_notices_sent", "rcnet_rail_notices_sent_total", "", ""},
    {"rail_notices_received", "rcnet_rail_notices_received_total", "", ""},
    {"rail_probes_sent", "rcnet_rail_probes_sent_total", "", ""},
    // The TUN data path's (daemon/tun_path.hpp). drops_refused counts the
    // packets the manager refused, which it counted itself (drops_oversize,
    // ...): not a drop reason of its own, or sum() would count them twice.
    {"tun_rx_packets", "rcnet_tun_read_packets_total", "", ""},
    {"tun_rx_bytes", "rcnet_tun_read_bytes_total", "", ""},
    {"tun_tx_packets", "rcnet_tun_written_packets_total", "", ""},
    {"tun_tx_bytes", "rcnet_tun_written_bytes_total", "", ""},
    {"drops_unmapped", kDropped, "reason", "unmapped"},
    // Not a drop: the kernel's own RS, MLD, DAD, IGMP, for no peer.
    {"link_scope_multicast", "rcnet_tun_link_scope_multicast_packets_total", "", ""},
    {"drops_not_ip", kDropped, "reason", "not_ip"},
    {"drops_refused", "rcnet_tun_refused_packets_total", "", ""},
    {"drops_tun_write", kDropped, "reason", "tun_write"},
    {"drops_not_attached", kDropped, "reason", "not_attached"},
    {"rx_uso_segmented", "rcnet_tun_uso_segmented_packets_total", "", ""},
    {"read_pauses", "rcnet_tun_read_pauses_total", "", ""},
    {"read_empty", "rcnet_tun_reads_empty_total", "", ""},
    {"tx_via_gateway", "rcnet_tun_gateway_packets_total", "", ""},
    {"icmp_unreachable_sent", "rcnet_icmp_errors_sent_total", "type", "unreachable"},
    {"icmp_too_big_sent", "rcnet_icmp_errors_sent_total", "type", "too_big"},
    {"icmp_rate_limited", "rcnet_icmp_errors_rate_limited_total", "", ""},
    // The ctl server's (daemon/ctl_server.hpp). Of the timed-out clients,
    // the silent ones are a metric of their own (a label would count them twice).
    {"ctl_clients_accepted", "rcnet_ctl_clients_accepted_total", "", ""},
    {"ctl_clients_refused_full", "rcnet_ctl_clients_refused_total", "reason", "full"},
    {"ctl_clients_refused_reserved", "rcnet_ctl_clients_refused_total", "reason", "reserved"},
    {"ctl_clients_refused_per_uid", "rcnet_ctl_clients_refused_total", "reason", "per_uid"},
    {"ctl_clients_evicted", "rcnet_ctl_clients_evicted_total", "", ""},
    {"ctl_clients_timed_out", "rcnet_ctl_clients_timed_out_total", "", ""},
    {"ctl_clients_timed_out_idle", "rcnet_ctl_clients_silent_timed_out_total", "", ""},
    {"ctl_clients_dropped", "rcnet_ctl_clients_dropped_total", "", ""},
    {"ctl_requests", "rcnet_ctl_requests_total", "", ""},
    {"ctl_requests_refused", "rcnet_ctl_requests_refused_total", "", ""},
    {"ctl_monitors", "rcnet_ctl_monitors_total", "", ""},
    {"ctl_monitor_events", "rcnet_ctl_monitor_events_total", "", ""},
    {"ctl_monitor_dropped", "rcnet_ctl_monitors_dropped_total", "", ""},
};

// The HELP of a family of several counters (one counter's family takes
// that counter's help text).
constexpr std::pair<std::string_view, std::string_view> kFamilyHelp[] = {
    {"rcnet_rejs_sent_total", "REJs sent, by reason"},
    {"rcnet_reaped_connections_total",
     "connections torn down by the reaper or a limit: idle, dead peer, underlay link down, "
     "LRU eviction"},
    {"rcnet_events_ignored_total", "duplicate, late or unknown events ignored, by kind"},
    {"rcnet_dropped_packets_total", "packets dropped, by reason"},
    {"rcnet_failovers_total", "peers moved off a failed link to another rail, by cause"},
    {"rcnet_ctl_clients_refused_total", "ctl clients refused (busy), by reason"},
};

constexpr std::string_view kDropsPrefix = "drops_";

// The row of `counter`, or the default one (row.counter empty).
MetricRow metric_row(std::string_view counter) {
  for (const MetricRow& r : kMetricRows) {
    if (r.counter == counter)
      return r;
  }
  if (counter.starts_with(kDropsPrefix))
    return {"", kDropped, "reason", counter.substr(kDropsPrefix.size())};
  return {"", "", "", ""};
}

// Every counter of a stats reply, grouped into its family (families in the
// order their first counter comes).
void counter_metrics(std::string& out, const json& stats) {
  struct Family {
    std::string name, help, samples;
    bool labelled = false;
  };
  std::vector<Family> families;
  for (const json& c : array_of(stats, "counters")) {
    const auto v = count(c, "value");
    if (!v)
      continue;
    const std::string name = text(c, "name");
    const MetricRow row = metric_row(name);
    const std::string metric =
        row.metric.empty() ? "rcnet_" + prom_name(name) + "_total" : std::string(row.metric);
    auto it = std::find_if(families.begin(), families.end(),
                           [&](const Family& f) { return f.name == metric; });
    if (it == families.end()) {
      families.push_back({metric, text(c, "help"), "", !row.label.empty()});
      it = families.end() - 1;
    }
    it->samples += metric;
    if (!row.label.empty())
      it->samples += "{" + std::string(row.label) + "=\"" + prom_label(row.value) + "\"}";
    it->samples += " " + std::to_string(*v) + "\n";
  }
  for (Family& f : families) {
    for (const auto& [name, help] : kFamilyHelp) {
      if (name == f.name)
        f.help = help;
    }
    prom_metric(out, f.name, "counter", f.help);
    out += f.samples;
  }
}

// A stats reply's "histograms" (views.hpp histogram_json) as Prometheus
// histograms: cumulative _bucket{le}, +Inf = _count, _sum in seconds.
void histogram_metrics(std::string& out, const json& stats) {
  const std::pair<const char*, const char*> kinds[] = {
      {"connect_time",
       "time from the start of a connection attempt (REQ to send or received) to ESTABLISHED"},
      {"teardown_time", "time from the start of a teardown to its QP destroyed"},
  };
  const json* hs = field(stats, "histograms");
  if (hs == nullptr || !hs->is_object())
    return;
  for (const auto& [key, help] : kinds) {
    const json* h = field(*hs, key);
    if (h == nullptr || !h->is_object())
      continue;
    const json& bounds = array_of(*h, "bounds_s");
    const json& le = array_of(*h, "le");
    const auto n = count(*h, "count");
    const auto sum = detail::number(*h, "sum_s");
    if (!n || !sum || bounds.size() != le.size())
      continue;
    const std::string name = std::string("rcnet_") +
                             (std::string_view(key) == "connect_time" ? "connect" : "teardown") +
                             "_duration_seconds";
    prom_metric(out, name, "histogram", help);
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      if (!bounds[i].is_number() || !le[i].is_number_unsigned())
        continue;
      char b[32];
      std::snprintf(b, sizeof b, "%g", bounds[i].get<double>());
      out +=
          name + "_bucket{le=\"" + b + "\"} " + std::to_string(le[i].get<std::uint64_t>()) + "\n";
    }
    char total[32];
    std::snprintf(total, sizeof total, "%.6f", *sum);
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(*n) + "\n";
    out += name + "_sum " + total + "\n";
    out += name + "_count " + std::to_string(*n) + "\n";
  }
}

// The rails of a status reply (views.hpp rails_json's objects), each
// labelled rail="N",device="NAME" (device "" while it is removed).
void rail_metrics(std::string& out, const json& status) {
  const json& rails = array_of(status, "rails");
  if (rails.empty())
    return;
  const auto labels = [](const json& r) {
    return "rail=\"" + prom_label(text(r, "rail")) + "\",device=\"" +
           prom_label(text(r, "device") == "-" ? "" : text(r, "device")) + "\"";
  };
  prom_metric(out, "rcnet_rail_up", "gauge",
              "1 when the rail is up (it carries traffic or stands by), 0 otherwise");
  for (const json& r : rails)
    out += "rcnet_rail_up{" + labels(r) + "} " + (text(r, "state") == "up" ? "1" : "0") + "\n";
  prom_metric(out, "rcnet_rail_state", "gauge",
              "1 for the rail's state (up, down, holddown, removed), 0 for the others");
  for (const json& r : rails) {
    for (const char* state : {"up", "down", "holddown", "removed"}) {
      out += "rcnet_rail_state{" + labels(r) + ",state=\"" + state + "\"} " +
             (text(r, "state") == state ? "1" : "0") + "\n";
    }
  }
  const std::pair<const char*, const char*> gauges[] = {
      {"links", "connections in service on the rail"},
      {"carrying", "connections on the rail that carry their peer's traffic now"},
  };
  for (const auto& [key, help] : gauges) {
    const std::string name = std::string("rcnet_rail_") + key;
    prom_metric(out, name, "gauge", help);
    for (const json& r : rails) {
      if (auto v = count(r, key))
        out += name + "{" + labels(r) + "} " + std::to_string(*v) + "\n";
    }
  }
  const std::pair<const char*, const char*> traffic[] = {
      {"tx_packets", "packets sent on the rail"},
      {"tx_bytes", "bytes sent on the rail"},
      {"rx_packets", "packets received on the rail"},
      {"rx_bytes", "bytes received on the rail"},
  };
  for (const auto& [key, help] : traffic) {
    const std::string name = std::string("rcnet_rail_") + key + "_total";
    prom_metric(out, name, "counter", help);
    for (const json& r : rails) {
      if (auto v = count(r, key))
        out += name + "{" + labels(r) + "} " + std::to_string(*v) + "\n";
    }
  }
}

}  // namespace

std::string render_prometheus(const json& stats, const json& status) {
  std::string out;
  counter_metrics(out, stats);
  histogram_metrics(out, stats);
  const json& m = status;
  prom_metric(out, "rcnet_up", "gauge", "1 when rcnetd answered");
  out += "rcnet_up 1\n";
  if (const json* d = field(m, "daemon"); d != nullptr && d->is_object()) {
    prom_metric(out, "rcnet_build_info", "gauge", "always 1; the version of rcnetd as a label");
    out += "rcnet_build_info{version=\"" + prom_label(text(*d, "version")) + "\"} 1\n";
    if (const auto t = detail::number(*d, "start_time_s")) {
      prom_metric(out, "rcnet_start_time_seconds", "gauge",
                  "when rcnetd started, in seconds since the Unix epoch");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", *t);
      out += std::string("rcnet_start_time_seconds ") + buf + "\n";
    }
    if (const json* heap = field(*d, "heap"); heap != nullptr && heap->is_object()) {
      const std::pair<const char*, const char*> heap_gauges[] = {
          {"in_use_bytes", "bytes of glibc's heap that rcnetd's allocations hold (mallinfo2)"},
          {"arena_bytes", "bytes glibc's allocator holds from the kernel for rcnetd's heap"},
      };
      for (const auto& [key, help] : heap_gauges) {
        if (const auto v = count(*heap, key)) {
          const std::string name = std::string("rcnet_heap_") + key;
          prom_metric(out, name, "gauge", help);
          out += name + " " + std::to_string(*v) + "\n";
        }
      }
    }
  }
  if (const json* states = field(m, "states"); states != nullptr && states->is_object()) {
    prom_metric(out, "rcnet_qps", "gauge",
                "QPs by state, establishment and teardown stages (rcnetctl qps)");
    for (const auto& [state, n] : states->items()) {
      if (n.is_number_unsigned())
        out += "rcnet_qps{state=\"" + prom_label(state) + "\"} " +
               std::to_string(n.get<std::uint64_t>()) + "\n";
    }
  }
  const std::pair<const char*, const char*> gauges[] = {
      {"connections", "connections in service (one per peer and rail at most)"},
      {"peers", "peers known to the connection manager"},
      {"in_teardown", "QPs in a teardown stage"},
      {"peers_without_redundancy",
       "peers with a link in service but no second healthy one (redundancy lost)"},
  };
  for (const auto& [key, help] : gauges) {
    if (auto v = count(m, key)) {
      prom_metric(out, std::string("rcnet_") + key, "gauge", help);
      out += std::string("rcnet_") + key + " " + std::to_string(*v) + "\n";
    }
  }
  if (const json* srq = field(m, "srq"); srq != nullptr && srq->is_object()) {
    const std::pair<const char*, const char*> srq_gauges[] = {
        {"size", "receive WRs of the SRQ"},
        {"posted", "receive WRs posted on the SRQ now"},
        {"limit", "SRQ low watermark (IBV_SRQ_LIMIT)"},
    };
    for (const auto& [key, help] : srq_gauges) {
      if (auto v = count(*srq, key)) {
        prom_metric(out, std::string("rcnet_srq_") + key, "gauge", help);
        out += std::string("rcnet_srq_") + key + " " + std::to_string(*v) + "\n";
      }
    }
  }
  // Two metrics, not one with kind="total"|"free": their sum means nothing.
  if (const json* slots = field(m, "send_slots"); slots != nullptr && slots->is_object()) {
    if (auto v = count(*slots, "total")) {
      prom_metric(out, "rcnet_send_slots", "gauge", "registered send slots");
      out += "rcnet_send_slots " + std::to_string(*v) + "\n";
    }
    if (auto v = count(*slots, "free")) {
      prom_metric(out, "rcnet_send_slots_free", "gauge", "send slots free now");
      out += "rcnet_send_slots_free " + std::to_string(*v) + "\n";
    }
  }
  rail_metrics(out, m);
  return out;
}

}  // namespace rcnet::ctl
