// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// render_prometheus: the text exposition format for node-exporter's
// textfile collector (render.hpp).
#include <string>
#include <string_view>
#include <utility>

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

// The counters failovers_<cause> (cm RCNET_RAIL_COUNTERS) are one metric with
// a cause label, so that a dashboard sums or splits them without knowing
// the causes.
constexpr std::string_view kFailoversPrefix = "failovers_";

// Every counter as rcnet_<name>_total, the failovers_<cause> ones as
// rcnet_failovers_total{cause="<cause>"} where the first of them stands.
void counter_metrics(std::string& out, const json& stats) {
  std::string failovers;  // the family's samples
  for (const json& c : array_of(stats, "counters")) {
    const std::string name = text(c, "name");
    const auto v = count(c, "value");
    if (v && name.starts_with(kFailoversPrefix)) {
      failovers += "rcnet_failovers_total{cause=\"" +
                   prom_label(name.substr(kFailoversPrefix.size())) + "\"} " + std::to_string(*v) +
                   "\n";
    }
  }
  bool failovers_done = false;
  for (const json& c : array_of(stats, "counters")) {
    const auto v = count(c, "value");
    if (!v)
      continue;
    const std::string name = text(c, "name");
    if (name.starts_with(kFailoversPrefix)) {
      if (!failovers_done) {
        prom_metric(out, "rcnet_failovers_total", "counter",
                    "peers moved off a failed link to another rail, by cause");
        out += failovers;
        failovers_done = true;
      }
      continue;
    }
    const std::string metric = "rcnet_" + prom_name(name) + "_total";
    prom_metric(out, metric, "counter", text(c, "help"));
    out += metric + " " + std::to_string(*v) + "\n";
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
  const json& m = status;
  prom_metric(out, "rcnet_up", "gauge", "1 when rcnetd answered");
  out += "rcnet_up 1\n";
  if (const json* states = field(m, "states"); states != nullptr && states->is_object()) {
    prom_metric(out, "rcnet_qps", "gauge",
                "QPs by state, establishment and teardown stages (rcnetctl qps)");
    for (const auto& [state, n] : states->items()) {
      if (n.is_number_unsigned())
        out +=
            "rcnet_qps{state=\"" + state + "\"} " + std::to_string(n.get<std::uint64_t>()) + "\n";
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
  if (const json* slots = field(m, "send_slots"); slots != nullptr && slots->is_object()) {
    prom_metric(out, "rcnet_send_slots", "gauge", "registered send slots, total and free");
    for (const char* kind : {"total", "free"}) {
      if (auto v = count(*slots, kind))
        out += std::string("rcnet_send_slots{kind=\"") + kind + "\"} " + std::to_string(*v) + "\n";
    }
  }
  rail_metrics(out, m);
  return out;
}

}  // namespace rcnet::ctl
