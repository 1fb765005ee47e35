// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// render_config: the running config as rcnetd.toml text (render.hpp).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config/keys.hpp"
#include "ctl/json_fields.hpp"
#include "ctl/render.hpp"

namespace rcnet::ctl {

using detail::field;

namespace {

// Where render_config's comments start, unless a line is longer.
constexpr std::size_t kConfigCommentColumn = 40;

// A dotted key as TOML writes it: bare when every part can be, else quoted
// whole (only a key from a newer or foreign daemon can need that).
std::string toml_key(const std::string& k) {
  const bool bare = !k.empty() && k.front() != '.' && k.back() != '.' &&
                    k.find("..") == std::string::npos &&
                    std::all_of(k.begin(), k.end(), [](char c) {
                      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
                    });
  return bare ? k : json(k).dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON value in TOML syntax: scalars as JSON writes them (a TOML basic
// string takes JSON's escapes), arrays as [a, b], objects as inline tables.
std::string toml_text(const json& v) {
  if (v.is_array() || v.is_object()) {
    std::string out = v.is_array() ? "[" : "{ ";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += first ? "" : ", ";
      first = false;
      if (v.is_object())
        out += toml_key(it.key()) + " = ";
      out += toml_text(*it);
    }
    return out + (v.is_array() ? "]" : (first ? "}" : " }"));
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string render_config(const json& d) {
  if (!d.is_object())
    return "-\n";
  std::vector<std::pair<std::string, std::string>> lines;  // text, comment
  const auto add = [&](const std::string& key, const json& v) {
    const config::Key* k = config::find_key(key);
    std::string comment;
    if (k != nullptr) {
      comment = k->unit.empty() ? "" : std::string(k->unit) + ", ";
      comment += k->apply == config::Apply::kLive ? "live" : "needs a restart";
    }
    if (v.is_null())
      lines.emplace_back("# " + key + " is not set", comment);
    else
      lines.emplace_back(toml_key(key) + " = " + toml_text(v), comment);
  };
  // The table's order (the file's); then keys this rcnetctl does not know,
  // from a newer rcnetd.
  for (const config::Key& k : config::keys()) {
    if (const json* v = field(d, std::string(k.dotted).c_str()))
      add(std::string(k.dotted), *v);
  }
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (config::find_key(it.key()) == nullptr)
      add(it.key(), *it);
  }
  std::size_t width = 0;
  for (const auto& [text, comment] : lines)
    width = std::max(width, std::min(text.size(), kConfigCommentColumn));
  std::string out;
  for (const auto& [text, comment] : lines) {
    out += text;
    if (!comment.empty())
      out += std::string(text.size() < width ? width - text.size() : 0, ' ') + "  # " + comment;
    out += "\n";
  }
  return out;
}

}  // namespace rcnet::ctl
