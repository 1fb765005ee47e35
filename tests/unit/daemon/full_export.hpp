// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The Prometheus text a whole rcnetd writes (render_prometheus, the function
// rcnetctl's --format prometheus and rcnet-metrics.service use) for a
// snapshot with every counter table (the manager's and rails', the TUN
// side's, the ctl server's), both histograms, two rails (rxe0, rxe1) and the
// daemon block: every metric family and label rcnetd can write, rendered
// from the replies as rcnetctl parses them. Shared by
// metrics_docs_test.cpp and alert_rules_test.cpp.
#include <chrono>
#include <string>

#include "ctl/render.hpp"
#include "ctl/views.hpp"
#include "ctl_server.hpp"
#include "tun_path.hpp"

namespace rcnet::daemon::test {

inline std::string full_prometheus_export() {
  using ctl::json;
  cm::Snapshot s;
  cm::RailSnapshot r;
  r.device = "rxe0";
  s.rails = {r, r};
  s.rails[1].index = 1;
  s.rails[1].device = "rxe1";
  s.connect_time.observe(std::chrono::milliseconds(2));
  json stats = ctl::stats_json(s);
  for (const json& c : ctl::counters_json(daemon::TunCounters{}))
    stats["counters"].push_back(c);
  for (const json& c : ctl::counters_json(daemon::CtlCounters{}))
    stats["counters"].push_back(c);
  json status = ctl::status_json(s);
  status["daemon"] = {{"version", "1"},
                      {"start_time_s", 1.5},
                      {"heap", {{"in_use_bytes", 1000}, {"arena_bytes", 4096}}}};
  // Through text and back, as rcnetctl gets them from the socket: the
  // renderer reads counts as JSON's unsigned numbers, which a parsed reply
  // has and a json built in process (a state's 0) may not.
  return ctl::render_prometheus(json::parse(stats.dump()), json::parse(status.dump()));
}

}  // namespace rcnet::daemon::test
