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
void prom_metric(std::string& out, const std::string& name, const char* type,
                 std::string_view help) {
  out += "# HELP " + name + " " + prom_help(help) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}
}  // namespace

std::string render_prometheus(const json& stats, const json& status) {
  std::string out;
  for (const json& c : array_of(stats, "counters")) {
    const auto v = count(c, "value");
    if (!v)
      continue;
    const std::string name = "rcnet_" + prom_name(text(c, "name")) + "_total";
    prom_metric(out, name, "counter", text(c, "help"));
    out += name + " " + std::to_string(*v) + "\n";
  }
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
      {"connections", "connections in service (one per peer at most)"},
      {"peers", "peers known to the connection manager"},
      {"in_teardown", "QPs in a teardown stage"},
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
  return out;
}

}  // namespace rcnet::ctl
