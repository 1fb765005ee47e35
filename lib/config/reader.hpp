// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Internal to lib/config: walks one parsed TOML document, remembers the line
// of every key it reads (so that cross-field checks can point at the right
// line) and keeps the first error. Only lib/config's .cpp files and
// key_kinds.hpp include it.

#include <toml++/toml.h>
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/keys.hpp"
#include "util/result.hpp"

namespace rcnet::config::detail {

class Reader {
 public:
  Reader(const toml::table& root, std::string_view source) : root_(root), source_(source) {}

  const toml::table& root() const { return root_; }
  bool failed() const { return error_.has_value(); }
  Error take_error() { return std::move(*error_); }

  // Records "SOURCE:LINE: KEY: MSG" (no LINE when 0, no KEY when empty)
  // unless an error is already recorded: only the first is reported.
  void fail(std::uint32_t line, std::string_view key, std::string_view msg) {
    if (error_)
      return;
    std::string s(source_);
    if (line > 0)
      s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) {
      s += key;
      s += ": ";
    }
    s += msg;
    error_ = Error::invalid(std::move(s));
  }
  // fail() at the line `key` was read from (none when absent from the file).
  void fail_key(std::string_view key, std::string_view msg) { fail(line_of(key), key, msg); }

  std::uint32_t line_of(std::string_view key) const {
    const auto it = lines_.find(std::string(key));
    return it == lines_.end() ? 0 : it->second;
  }
  bool present(std::string_view key) const { return lines_.count(std::string(key)) != 0; }
  void record(const std::string& full, std::uint32_t line) { lines_[full] = line; }

  // The table `name` ([name]), or nullptr when absent; an error if the key
  // exists but is not a table.
  const toml::table* section(std::string_view name) {
    const toml::node* n = root_.get(name);
    if (n == nullptr)
      return nullptr;
    if (!n->is_table()) {
      fail(n->source().begin.line, name, "expected a table ([" + std::string(name) + "])");
      return nullptr;
    }
    return n->as_table();
  }

  // Every key of `tbl` must be in `known`; `prefix` is the dotted name of
  // `tbl` ("" for the root).
  void only_keys(const toml::table& tbl, std::string_view prefix,
                 std::span<const std::string_view> known) {
    for (auto&& [k, v] : tbl) {
      if (std::find(known.begin(), known.end(), k.str()) != known.end())
        continue;
      const std::uint32_t line =
          k.source().begin.line > 0 ? k.source().begin.line : v.source().begin.line;
      std::string full =
          prefix.empty() ? std::string(k.str()) : std::string(prefix) + "." + std::string(k.str());
      fail(line, full, "unknown key");
    }
  }

  // Looks `key` up in `tbl` and records its line under `full`. nullptr when
  // absent, or when an error is already recorded (reading stops there).
  const toml::node* find(const toml::table* tbl, const std::string& full, std::string_view key) {
    if (tbl == nullptr || failed())
      return nullptr;
    const toml::node* n = tbl->get(key);
    if (n != nullptr)
      lines_[full] = n->source().begin.line;
    return n;
  }

  // An error unless `full` was read; at the line of `tbl` when there is one.
  void require(const std::string& full, const toml::table* tbl) {
    if (failed())
      return;
    if (!present(full))
      fail(tbl != nullptr ? tbl->source().begin.line : 0, full, "required key is missing");
  }

 private:
  const toml::table& root_;
  std::string_view source_;
  std::optional<Error> error_;
  std::map<std::string, std::uint32_t> lines_;
};

// One present value handed to a Key's read(): `full` is its dotted name
// ("timeouts.idle"), its line already recorded in `r`.
struct Field {
  Reader& r;
  const toml::node& node;
  std::string full;
  const Key& key;  // the row being read (range, name)

  void fail(std::string_view msg) { r.fail_key(full, msg); }
};

// Reads every row of config::keys() from `r.root()` into `c`: unknown tables
// and keys, types, ranges, validators, required keys (keys.cpp).
void read_keys(Reader& r, Config& c);

}  // namespace rcnet::config::detail
