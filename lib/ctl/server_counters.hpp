// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The ctl server's counters (daemon/ctl_server.hpp counts them; "stats"
// reports them after the daemon's), one row each: X(name, series, help)
// (util/counter_row.hpp). Here rather than beside the server so that the
// Prometheus export (ctl/prometheus.cpp), which rcnetctl runs, reads the
// same rows.

#include "util/counter_row.hpp"

namespace rcnet::ctl {

inline constexpr SeriesFamily kCtlClientsRefused{"rcnet_ctl_clients_refused_total", "reason",
                                                 "ctl clients refused (busy), by reason"};

// Of the timed-out clients, the silent ones are a metric of their own (a
// label would count them twice).
#define RCNET_CTL_COUNTERS(X)                                                         \
  X(ctl_clients_accepted, "rcnet_ctl_clients_accepted_total", "ctl clients accepted") \
  X(ctl_clients_refused_full, kCtlClientsRefused("full"),                             \
    "ctl clients refused: max_clients reached")                                       \
  X(ctl_clients_refused_reserved, kCtlClientsRefused("reserved"),                     \
    "ctl clients refused: only root's slots free")                                    \
  X(ctl_clients_refused_per_uid, kCtlClientsRefused("per_uid"),                       \
    "ctl clients refused: max_clients_per_uid")                                       \
  X(ctl_clients_evicted, "rcnet_ctl_clients_evicted_total",                           \
    "idle ctl clients closed to make room for a new one")                             \
  X(ctl_clients_timed_out, "rcnet_ctl_clients_timed_out_total",                       \
    "ctl clients closed: no complete request in time")                                \
  X(ctl_clients_timed_out_idle, "rcnet_ctl_clients_silent_timed_out_total",           \
    "of which: sent nothing in first_request_timeout")                                \
  X(ctl_clients_dropped, "rcnet_ctl_clients_dropped_total",                           \
    "ctl clients dropped: oversized request or reply queue")                          \
  X(ctl_requests, "rcnet_ctl_requests_total", "ctl requests answered")                \
  X(ctl_requests_refused, "rcnet_ctl_requests_refused_total",                         \
    "ctl requests refused: forbidden or malformed")                                   \
  X(ctl_monitors, "rcnet_ctl_monitors_total", "ctl monitor subscriptions")            \
  X(ctl_monitor_events, "rcnet_ctl_monitor_events_total",                             \
    "connection events published to ctl monitors")                                    \
  X(ctl_monitor_dropped, "rcnet_ctl_monitors_dropped_total",                          \
    "ctl monitors closed: did not read their events in time")

inline constexpr CounterRow kServerCounterRows[] = {RCNET_CTL_COUNTERS(RCNET_COUNTER_ROW)};

}  // namespace rcnet::ctl
