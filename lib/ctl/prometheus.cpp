// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// render_prometheus: the text exposition format for node-exporter's
// textfile collector (render.hpp).
#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cm/snapshot.hpp"
#include "ctl/json_fields.hpp"
#include "ctl/render.hpp"
#include "ctl/server_counters.hpp"
#include "ctl/tun_counters.hpp"
#include "util/counter_row.hpp"

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

constexpr std::string_view kDropsPrefix = "drops_";

// The series of a counter of "stats", by its name: its row's (the
// manager's and rails' cm::Counters, the ctl server's, the TUN side's). A counter without one (a
// newer rcnetd's) is drops_<reason> of rcnet_dropped_packets_total or else rcnet_<name>_total
// (metric "" here); rcnetctl(8) METRICS lists every family.
Series series_of(std::string_view counter) {
  for (const std::span<const CounterRow> table :
       {std::span<const CounterRow>(cm::Counters::kRows),
        std::span<const CounterRow>(kServerCounterRows),
        std::span<const CounterRow>(TunCounters::kRows)}) {
    for (const CounterRow& r : table) {
      if (r.name == counter)
        return r.series;
    }
  }
  if (counter.starts_with(kDropsPrefix))
    return cm::kDropped(counter.substr(kDropsPrefix.size()));
  return "";
}

// Every counter of a stats reply, grouped into its family (families in the
// order their first counter comes).
void counter_metrics(std::string& out, const json& stats) {
  struct Family {
    std::string name, help, samples;
  };
  std::vector<Family> families;
  for (const json& c : array_of(stats, "counters")) {
    const auto v = count(c, "value");
    if (!v)
      continue;
    const std::string name = text(c, "name");
    const Series series = series_of(name);
    const std::string metric =
        series.metric.empty() ? "rcnet_" + prom_name(name) + "_total" : std::string(series.metric);
    auto it = std::find_if(families.begin(), families.end(),
                           [&](const Family& f) { return f.name == metric; });
    if (it == families.end()) {
      families.push_back(
          {metric, series.family_help.empty() ? text(c, "help") : std::string(series.family_help),
           ""});
      it = families.end() - 1;
    }
    it->samples += metric;
    if (!series.label.empty())
      it->samples += "{" + std::string(series.label) + "=\"" + prom_label(series.value) + "\"}";
    it->samples += " " + std::to_string(*v) + "\n";
  }
  for (const Family& f : families) {
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
