// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The log levels and their names, one row each. Every spelling of a level
// comes from kLogLevels: log.level in rcnetd.toml (lib/config/keys.cpp),
// rcnetd --log-level, the ctl "log-level" command and its reply
// (lib/ctl), and rcnetctl's help and errors. rcnetctl's bash completion and
// rcnetctl(8) are held to it by tests/unit/rcnetctl/docs_test.cpp.
// The log targets likewise: kLogTargets names them for log.target and
// rcnetd --log-target.

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace rcnet::config {

// spdlog's levels (daemon/logging.cpp maps them), by the names operators type.
enum class LogLevel : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

struct LogLevelName {
  LogLevel level;
  std::string_view name;
};

// In LogLevel's order (checked below), quietest last.
inline constexpr LogLevelName kLogLevels[] = {
    {LogLevel::kTrace, "trace"}, {LogLevel::kDebug, "debug"}, {LogLevel::kInfo, "info"},
    {LogLevel::kWarn, "warn"},   {LogLevel::kError, "error"}, {LogLevel::kCritical, "critical"},
    {LogLevel::kOff, "off"},
};

// The names indexed by LogLevel, for code that stores a name's index as the
// enum (keys.cpp's enumeration rows).
constexpr std::array<std::string_view, std::size(kLogLevels)> log_level_names() {
  std::array<std::string_view, std::size(kLogLevels)> out{};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = kLogLevels[i].name;
  return out;
}

namespace detail {
constexpr bool log_levels_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kLogLevels); ++i) {
    if (static_cast<std::size_t>(kLogLevels[i].level) != i)
      return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::log_levels_in_enum_order(), "kLogLevels: one row per LogLevel, in order");

// "?" for a value that is no LogLevel.
constexpr std::string_view to_string(LogLevel l) {
  for (const LogLevelName& row : kLogLevels) {
    if (row.level == l)
      return row.name;
  }
  return "?";
}

// Exact, case-sensitive names only; nullopt otherwise.
constexpr std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (const LogLevelName& row : kLogLevels) {
    if (row.name == name)
      return row.level;
  }
  return std::nullopt;
}

// Every name in the table's order, joined: "trace, debug, ..., off".
inline std::string log_level_list(std::string_view separator = ", ") {
  std::string out;
  for (const LogLevelName& row : kLogLevels) {
    if (!out.empty())
      out += separator;
    out += row.name;
  }
  return out;
}

// Where rcnetd logs (daemon/logging.cpp): kAuto is the journal when stderr
// is already connected to it, else stderr.
enum class LogTarget : std::uint8_t { kAuto, kJournal, kStderr };

// Indexed by LogTarget, as keys.cpp's enumeration rows store a name's index.
inline constexpr std::array<std::string_view, 3> kLogTargets = {"auto", "journal", "stderr"};
static_assert(static_cast<std::size_t>(LogTarget::kStderr) + 1 == kLogTargets.size(),
              "kLogTargets: one name per LogTarget, in order");

constexpr std::string_view to_string(LogTarget t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kLogTargets.size() ? kLogTargets[i] : "?";
}

// "auto, journal or stderr", for help texts and errors.
inline std::string log_target_list() {
  std::string out;
  for (std::size_t i = 0; i < kLogTargets.size(); ++i)
    out += std::string(i == 0                        ? ""
                       : i + 1 == kLogTargets.size() ? " or "
                                                     : ", ") +
           std::string(kLogTargets[i]);
  return out;
}

// Exact names only; nullopt otherwise.
constexpr std::optional<LogTarget> parse_log_target(std::string_view name) {
  for (std::size_t i = 0; i < kLogTargets.size(); ++i) {
    if (kLogTargets[i] == name)
      return static_cast<LogTarget>(i);
  }
  return std::nullopt;
}

}  // namespace rcnet::config
