// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Durations as rcnetd.toml writes them: "10s", "500ms", "2m", "1h", "1.5s".
#include <algorithm>
#include <cmath>

#include "config/key_kinds.hpp"

namespace rcnet::config {

namespace detail {

std::optional<Duration> parse_duration(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
    ++i;
  if (i == 0)
    return std::nullopt;
  const std::string number(s.substr(0, i));
  const std::string_view unit = s.substr(i);
  double scale_s = 0;
  if (unit == "ms") {
    scale_s = 1e-3;
  } else if (unit == "s") {
    scale_s = 1;
  } else if (unit == "m") {
    scale_s = 60;
  } else if (unit == "h") {
    scale_s = 3600;
  } else {
    return std::nullopt;
  }
  if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
      number.back() == '.') {
    return std::nullopt;
  }
  // strtod would follow the locale; the grammar above is plain digits and '.'.
  double v = 0;
  double frac = 0.1;
  bool after_dot = false;
  for (char c : number) {
    if (c == '.') {
      after_dot = true;
    } else if (after_dot) {
      v += (c - '0') * frac;
      frac /= 10;
    } else {
      v = v * 10 + (c - '0');
    }
  }
  const double seconds = v * scale_s;
  if (!std::isfinite(seconds) || seconds > 1e6)
    return std::nullopt;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

}  // namespace detail

std::string format_duration(Duration d) {
  std::int64_t ns = d.count();
  if (ns == 0)
    return "0s";
  std::string sign;
  if (ns < 0) {
    sign = "-";
    ns = -ns;
  }
  struct Unit {
    std::int64_t ns;
    const char* suffix;
  };
  for (const Unit u : {Unit{3'600'000'000'000, "h"}, Unit{60'000'000'000, "m"},
                       Unit{1'000'000'000, "s"}, Unit{1'000'000, "ms"}}) {
    if (ns % u.ns == 0)
      return sign + std::to_string(ns / u.ns) + u.suffix;
  }
  std::string frac = std::to_string(ns % 1'000'000'000);
  frac.insert(0, 9 - frac.size(), '0');
  frac.erase(frac.find_last_not_of('0') + 1);
  return sign + std::to_string(ns / 1'000'000'000) + "." + frac + "s";
}

}  // namespace rcnet::config
