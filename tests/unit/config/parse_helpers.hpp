// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// What the config tests share: an address from text, a config file from
// its [node] and [tun] lines, and parse() of a config text ("t.toml") that
// must succeed or must fail with EINVAL (its message returned). `lookup`
// stands in for the machine's interfaces.
#pragma once

#include <string>
#include <system_error>
#include <utility>

#include "catch2_compat.hpp"
#include "config/config.hpp"
#include "test_helpers.hpp"
#include "util/address.hpp"

namespace rcnet::config::test {

using unit::ip;

// A config file of `node` lines in [node], `tun` lines in [tun], then
// `more`. Lines: 1 [node], 2 node, 3 [tun], 4 tun's first line, ...
inline std::string file(const std::string& node, const std::string& tun,
                        const std::string& more = "") {
  return "[node]\n" + node + "\n[tun]\n" + tun + "\n" + more;
}

inline Config parse_ok(const std::string& text, const InterfaceLookup& lookup = {}) {
  auto r = parse(text, "t.toml", lookup);
  INFO(text);
  if (!r)
    FAIL(r.error().context);
  return std::move(r).value();
}

inline std::string parse_err(const std::string& text, const InterfaceLookup& lookup = {}) {
  auto r = parse(text, "t.toml", lookup);
  INFO(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == std::errc::invalid_argument);
  return r.error().context;
}

}  // namespace rcnet::config::test
