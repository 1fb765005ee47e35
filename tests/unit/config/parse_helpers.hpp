// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// What the config tests share: an address from text, and parse() of a
// config text ("t.toml") that must succeed or must fail with EINVAL (its
// message returned). `lookup` stands in for the machine's interfaces.
#pragma once

#include <string>
#include <system_error>
#include <utility>

#include "catch2_compat.hpp"
#include "config/config.hpp"
#include "util/address.hpp"

namespace rcnet::config::test {

inline IpAddr ip(const char* s) {
  auto a = IpAddr::parse(s);
  REQUIRE(a);
  return *a;
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
