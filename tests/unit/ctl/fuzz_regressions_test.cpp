// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Bugs the `ctl` fuzzer found, fixed in lib/ctl; each test pins its fix.
#include "catch2_compat.hpp"

#include "ctl/render.hpp"

namespace ctl_fuzz_regressions_test {
using namespace rcnet::ctl;

// A duration beyond what a long long holds (hostile or corrupt JSON from the
// socket: "idle_ms": 1e300) went through std::llround, whose result is then
// unspecified (LLONG_MIN on x86-64), and printed as "-9223372036854775808ms".
TEST_CASE("huge durations render as days, never negative", "[ctl][fuzz]") {
  CHECK(format_duration_ms(1e19) == "1.16e+11d");
  CHECK(format_duration_ms(9.3e18) == "1.08e+11d");
  CHECK(format_duration_ms(1e300) == "1.16e+292d");
  CHECK(format_duration_ms(86399999999999.0) == "999999d23h");
  // The ranges below stay as they were.
  CHECK(format_duration_ms(999.49) == "999ms");
  CHECK(format_duration_ms(999.5) == "1.0s");
  CHECK(format_duration_ms(59949) == "59.9s");
  CHECK(format_duration_ms(86399999) == "23h59m");
  CHECK(format_duration_ms(86400000) == "1d00h");
}

}  // namespace ctl_fuzz_regressions_test
