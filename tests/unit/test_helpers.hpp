// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Small helpers that tests of several components share: an address from
// its text, and a text cut into lines or words.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/address.hpp"

namespace rcnet::unit {

// The address `text` names ("10.0.0.1", "fe80::1"). Throws
// std::invalid_argument if it names none: the test that called it fails
// with the text, and so does a namespace-scope constant (outside any test
// case, where Catch2's REQUIRE cannot report).
inline IpAddr ip(std::string_view text) {
  auto a = IpAddr::parse(text);
  if (!a)
    throw std::invalid_argument("not an IP address: " + std::string(text));
  return *a;
}

// `text` cut at each '\n' (no line for the text after a last '\n').
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

// The words of `text`, split on runs of white space.
inline std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

}  // namespace rcnet::unit
