// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The key table of rcnetd.toml: one row per key, the only place a key is
// written in the source (systemd-networkd's gperf table is the model). The
// rows drive
//   - config::parse(): which tables and keys exist (anything else is an
//     "unknown key"), each key's type, range or validator, required keys;
//   - config::restart_required(): a changed key whose row says kRestart;
//   - config::reload(): what a SIGHUP applies, the kLive rows' copy();
//   - the ctl "config" reply (ctl::config_json) and its rendering: one entry
//     per row, named by the dotted key, valued as the file writes it.
// Checks that involve several keys (srq.limit < srq.size, ...) run after the
// rows, in config.cpp. The man page (man/rcnetd.toml.5.scd) and the example
// (lib/config/rcnetd.example.toml) document every row; unit tests hold them
// to the table.
//
// Defaults are not written in the rows: they are the member initialisers of
// config::Config and cm::ManagerConfig (lib/cm owns the manager's), read back
// through each row's get() (Key::default_value()).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.hpp"
#include "util/time.hpp"

namespace rcnet::config {

namespace detail {
struct Field;  // one TOML value being read (reader.hpp)
}

// What a SIGHUP does with a changed key.
enum class Apply : std::uint8_t {
  kLive,     // applied by the reload (config::reload, then cm::Manager::reconfigure,
             // log level, peer table)
  kRestart,  // the reload refuses the whole file and names the key
};

// A value in an inline table: a string, or a list of strings (a
// [[peers.static]] entry's underlay on several rails).
struct InlineValue {
  std::variant<std::string, std::vector<std::string>> v;
  InlineValue(std::string s) : v(std::move(s)) {}    // NOLINT(google-explicit-constructor)
  InlineValue(const char* s) : v(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  InlineValue(std::vector<std::string> l)
      : v(std::move(l)) {}  // NOLINT(google-explicit-constructor)
  bool operator==(const InlineValue&) const = default;
};
// nlohmann::json's conversion of a user type (its to_json, found by
// argument-dependent lookup): the ctl config reply (ctl::config_json) writes
// an InlineValue as the string or array it holds, as the file would.
template <class Json>
void to_json(Json& j, const InlineValue& x) {
  std::visit([&j](const auto& y) { j = y; }, x.v);
}

// A TOML inline table ([[peers.static]] entries), keys in the file's
// documented order.
using InlineTable = std::vector<std::pair<std::string, InlineValue>>;

// A key's value typed and spelled as rcnetd.toml writes it: durations as the
// canonical duration string (format_duration), addresses and prefixes as
// text, enums by name. A key that takes one value per rail (node.address,
// peers.underlay_prefix, a static peer's underlay) is a string with one rail
// and a list with several. std::monostate: an optional key that is not set
// (peers.underlay_prefix) or a required key with no default.
using Value = std::variant<std::monostate, bool, std::int64_t, std::string,
                           std::vector<std::string>, std::vector<InlineTable>>;

struct Key {
  std::string_view dotted;  // "timeouts.idle": [section] and key, as operators write it
  Apply apply;
  bool required;  // no default: parse() fails when the file lacks it
  // Integers: the accepted range, inclusive. Other kinds: 0, 0.
  std::int64_t min;
  std::int64_t max;
  std::string_view unit;  // of an integer ("bytes", "receive WRs"); "" if none
  std::string_view help;  // one line; the man page has the full text
  // The value in `c`, as the file would write it.
  Value (*get)(const Config& c);
  // Reads the key's TOML value into `c`, validating type, range and its own
  // validator; a failure is recorded in the reader with file, line and key.
  void (*read)(detail::Field& f, Config& c);
  // kLive rows: sets the key's value in `to` to the one in `from` (the
  // reload's copy, config::reload()). nullptr for kRestart rows.
  void (*copy)(const Config& from, Config& to);

  // "timeouts" and "idle" of "timeouts.idle".
  constexpr std::string_view section() const { return dotted.substr(0, dotted.find('.')); }
  constexpr std::string_view name() const { return dotted.substr(dotted.find('.') + 1); }
  // The value of a file that does not set the key; monostate when required.
  Value default_value() const;
};

// Every row, in the order of the file's documentation (and of error checks:
// parse() reports the first failing row).
std::span<const Key> keys();
// The row of `dotted`, or nullptr.
const Key* find_key(std::string_view dotted);

// `d` in the file's syntax, the largest whole unit that is exact: "1h", "2m",
// "10s", "1500ms"; a value with a sub-millisecond part as decimal seconds
// ("1.0005s"), which parse() may read back a nanosecond off (it goes through
// a double). One string per duration, so equal strings mean equal values.
std::string format_duration(Duration d);

}  // namespace rcnet::config
