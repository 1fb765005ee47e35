// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Reading fields of JSON that came over a socket, for rcnetctl's renderers
// (render.cpp, prometheus.cpp, config_text.cpp): a missing or mistyped field
// reads as absent, and nothing throws. Internal to lib/ctl.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "ctl/protocol.hpp"

namespace rcnet::ctl::detail {

// `j[key]`, or nullptr when `j` is no object or has no such member.
inline const json* field(const json& j, const char* key) {
  if (!j.is_object())
    return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// A value as table text; "-" for missing, null or an empty string.
inline std::string text(const json* v) {
  if (v == nullptr || v->is_null())
    return "-";
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    return s.empty() ? "-" : s;
  }
  if (v->is_boolean())
    return v->get<bool>() ? "yes" : "no";
  if (v->is_number_unsigned())
    return std::to_string(v->get<std::uint64_t>());
  if (v->is_number_integer())
    return std::to_string(v->get<std::int64_t>());
  if (v->is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v->get<double>());
    return buf;
  }
  return v->dump(-1, ' ', false, json::error_handler_t::replace);
}
inline std::string text(const json& j, const char* key) {
  return text(field(j, key));
}

// Any JSON number.
inline std::optional<double> number(const json& j, const char* key) {
  const json* v = field(j, key);
  if (v == nullptr || !v->is_number())
    return std::nullopt;
  return v->get<double>();
}

// Unsigned integers only.
inline std::optional<std::uint64_t> count(const json& j, const char* key) {
  const json* v = field(j, key);
  if (v == nullptr || !v->is_number_unsigned())
    return std::nullopt;
  return v->get<std::uint64_t>();
}

// `data[key]` when it is an array, else an empty one.
inline const json& array_of(const json& data, const char* key) {
  static const json kEmpty = json::array();
  const json* v = field(data, key);
  return v != nullptr && v->is_array() ? *v : kEmpty;
}

}  // namespace rcnet::ctl::detail
