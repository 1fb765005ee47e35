// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A counter table's row: one row per counter gives its field (the name
// "stats" and the exit log use), its help and its Prometheus series, so a
// counter is written once (rcnetctl(8) METRICS documents the series; a test
// holds the page to what the rows produce). The tables are X-macros of rows
// X(name, series, help): cm/snapshot.hpp (the manager's and the rails'),
// ctl/server_counters.hpp (the ctl server's).

#include <string_view>

namespace rcnet {

// Where a counter goes in the Prometheus export (ctl/prometheus.cpp): its
// metric family, <ns>_<what>_<unit>_total, and for a family of several
// counters the label that tells them apart. A family's sum() over its
// label is meaningful: the label splits one total, it never counts a thing
// twice.
struct Series {
  std::string_view metric;
  std::string_view label;  // "" for a family of one counter
  std::string_view value;  // the label's value for this counter
  // The family's HELP; "" takes the help of the family's first counter.
  std::string_view family_help;

  // A family of one counter: its HELP is the counter's help.
  constexpr Series(const char* m) : metric(m) {}  // NOLINT(google-explicit-constructor)
  constexpr Series(std::string_view m, std::string_view l, std::string_view v, std::string_view h)
      : metric(m), label(l), value(v), family_help(h) {}
};

// A metric family of several counters: family(value) is one counter's series.
struct SeriesFamily {
  std::string_view metric;
  std::string_view label;
  std::string_view help;  // "": the help of the family's first counter
  constexpr Series operator()(std::string_view value) const { return {metric, label, value, help}; }
};

struct CounterRow {
  std::string_view name;
  Series series;
  std::string_view help;
};

// Expands a row X(name, series, help) of a counter table to its CounterRow
// (a table's static kRows).
#define RCNET_COUNTER_ROW(name, series, help) ::rcnet::CounterRow{#name, series, help},

}  // namespace rcnet
