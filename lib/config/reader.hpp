// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Internal to lib/config: walks one parsed TOML document (the file merged
// with its drop-ins, load()), remembers the file and line of every key it
// reads (so that cross-field checks can point at the right line, and
// --check-config can say where each value came from) and keeps the first
// error. Only lib/config's .cpp files and
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

  // Where `n` was written: its file (a drop-in's path, or the source name
  // parse() was given) and line.
  Origin origin_of(const toml::node& n) const {
    const auto& src = n.source();
    return Origin{src.path ? *src.path : std::string(source_), src.begin.line};
  }
  // The main file, no line: a key that no file sets.
  Origin nowhere() const { return Origin{std::string(source_), 0}; }

  // Records "FILE:LINE: KEY: MSG" (no LINE when 0, no KEY when empty)
  // unless an error is already recorded: only the first is reported.
  void fail(const Origin& at, std::string_view key, std::string_view msg) {
    if (error_)
      return;
    std::string s = at.file.empty() ? std::string(source_) : at.file;
    if (at.line > 0)
      s += ":" + std::to_string(at.line);
    s += ": ";
    if (!key.empty()) {
      s += key;
      s += ": ";
    }
    s += msg;
    error_ = Error::invalid(std::move(s));
  }
  // fail() at the file and line `key` was read from (the main file and no
  // line when no file sets it).
  void fail_key(std::string_view key, std::string_view msg) { fail(where(key), key, msg); }

  Origin where(std::string_view key) const {
    const auto it = origins_.find(key);
    return it == origins_.end() ? nowhere() : it->second;
  }
  std::uint32_t line_of(std::string_view key) const { return where(key).line; }
  bool present(std::string_view key) const { return origins_.find(key) != origins_.end(); }
  void record(const std::string& full, Origin at) { origins_[full] = std::move(at); }
  // Every key read, with where it was written.
  const std::map<std::string, Origin, std::less<>>& origins() const { return origins_; }

  // The table `name` ([name]), or nullptr when absent; an error if the key
  // exists but is not a table.
  const toml::table* section(std::string_view name) {
    const toml::node* n = root_.get(name);
    if (n == nullptr)
      return nullptr;
    if (!n->is_table()) {
      fail(origin_of(*n), name, "expected a table ([" + std::string(name) + "])");
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
      std::string full =
          prefix.empty() ? std::string(k.str()) : std::string(prefix) + "." + std::string(k.str());
      fail(origin_of(v), full, "unknown key");
    }
  }

  // Looks `key` up in `tbl` and records its line under `full`. nullptr when
  // absent, or when an error is already recorded (reading stops there).
  const toml::node* find(const toml::table* tbl, const std::string& full, std::string_view key) {
    if (tbl == nullptr || failed())
      return nullptr;
    const toml::node* n = tbl->get(key);
    if (n != nullptr)
      origins_[full] = origin_of(*n);
    return n;
  }

  // An error unless `full` was read; at the line of `tbl` when there is one.
  void require(const std::string& full, const toml::table* tbl) {
    if (failed())
      return;
    if (!present(full))
      fail(tbl != nullptr ? origin_of(*tbl) : nowhere(), full, "required key is missing");
  }

 private:
  const toml::table& root_;
  std::string_view source_;
  std::optional<Error> error_;
  std::map<std::string, Origin, std::less<>> origins_;
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
