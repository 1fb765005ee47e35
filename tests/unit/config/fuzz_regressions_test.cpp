// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Bugs the `config` fuzzer found (inputs: tests/fuzz/corpus/config/regression-*), each
// pinned by a test. Found while lib/config was being restructured, fixed after
// the merge; each test failed (was tagged [!shouldfail]) before its fix.
#include "catch2_compat.hpp"

#include "config/config.hpp"

namespace config_fuzz_regressions_test {
using namespace rcnet;

// Regression `syntax-error-newline`: config.hpp promises a one-line error,
// but config::parse() copies toml++'s parse_error description verbatim, and
// toml++ quotes the byte it stopped at: for `enabled = t` at the end of a
// line that byte is the newline, so the message ("...expected 'true', saw
// 't\n'") spans two lines in the journal and on stderr.
TEST_CASE("config: a TOML syntax error is reported on one line", "[config][fuzz]") {
  const auto r = config::parse("[srq]\nenabled = t\n", "rcnetd.toml");
  REQUIRE_FALSE(r.ok());
  INFO(r.error().context);
  CHECK(r.error().context.rfind("rcnetd.toml:2:", 0) == 0);
  CHECK(r.error().context.find('\n') == std::string::npos);
}

}  // namespace config_fuzz_regressions_test
