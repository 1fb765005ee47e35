// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The tests' one way into Catch2, whichever major version the build host
// has: v2 (Debian 12's catch2, one header) or v3 (Debian 13's libcatch2-dev,
// a library with split headers). The tests are written against v2's names;
// v3 moved the string matchers into Catch::Matchers and renamed the string
// Contains to ContainsSubstring (Catch2's docs/migrate-v2-to-v3.md), so
// those names are brought back here. Nothing else differs for what the tests
// use (TEST_CASE, SECTION, REQUIRE/CHECK, CHECK_THAT, GENERATE,
// Catch::Session).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& s,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(s, cs);
}
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch
#else
#include <catch2/catch.hpp>
#endif
