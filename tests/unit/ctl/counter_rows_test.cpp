// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The counter rows (util/counter_row.hpp): each row gives one counter its
// field, its "stats" name and help, and its Prometheus series; a REJ
// reason's row (wire/private_data.hpp) gives it a rejects_sent_<name>
// counter, the one reject() adds to, exported as its reason of
// rcnet_rejs_sent_total.
#include <set>
#include <span>
#include <string>
#include "catch2_compat.hpp"

#include "cm/snapshot.hpp"
#include "ctl/render.hpp"
#include "ctl/server_counters.hpp"
#include "ctl/views.hpp"

namespace ctl_counter_rows_test {
using namespace rcnet;

TEST_CASE("counter rows: one per counter, unique names, well-formed series", "[ctl][metrics]") {
  std::size_t fields = 0;
  cm::Counters{}.for_each([&](std::string_view, std::uint64_t, std::string_view) { ++fields; });
  CHECK(std::size(cm::Counters::kRows) == fields);

  std::set<std::string_view> names;
  for (const std::span<const CounterRow> table :
       {std::span<const CounterRow>(cm::Counters::kRows),
        std::span<const CounterRow>(ctl::kServerCounterRows)}) {
    for (const CounterRow& r : table) {
      INFO(r.name);
      CHECK(names.insert(r.name).second);
      CHECK_FALSE(r.help.empty());
      CHECK(r.series.metric.starts_with("rcnet_"));
      CHECK(r.series.metric.ends_with("_total"));
      CHECK(r.series.label.empty() == r.series.value.empty());
    }
  }
}

TEST_CASE("counter rows: a REJ reason's row is its counter and its series", "[ctl][metrics]") {
  cm::Counters none;
  CHECK(cm::rejects_sent(none, wire::RejectReason::kNone) == nullptr);
  for (int code = 1; code <= static_cast<int>(wire::kMaxRejectReason); ++code) {
    const auto reason = static_cast<wire::RejectReason>(code);
    const std::string name(wire::to_string(reason));
    INFO(name);
    cm::Counters c;
    std::uint64_t* sent = cm::rejects_sent(c, reason);
    REQUIRE(sent != nullptr);
    *sent = 3;
    std::string counted;
    c.for_each([&](std::string_view n, std::uint64_t v, std::string_view) {
      if (v != 0)
        counted += std::string(n);
    });
    CHECK(counted == "rejects_sent_" + name);
    const std::string text =
        ctl::render_prometheus({{"counters", ctl::counters_json(c)}}, ctl::json::object());
    CHECK(text.find("rcnet_rejs_sent_total{reason=\"" + name + "\"} 3\n") != std::string::npos);
  }
}

}  // namespace ctl_counter_rows_test
