// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// config::load(): the file, its drop-ins (PATH.d/*.toml) merged over it in
// lexical order, then parse().
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/checks.hpp"
#include "config/config.hpp"

namespace rcnet::config {

namespace {

Result<std::string> read_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Error::invalid(path +
                          ": is a directory, not a configuration file (rcnetd -c FILE, "
                          "e.g. " +
                          path + (path.ends_with('/') ? "" : "/") + "rcnetd.toml)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::from_errno(errno != 0 ? errno : ENOENT, "open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error::from_errno(errno != 0 ? errno : EIO, "read " + path);
  return text.str();
}

// A drop-in's keys over `into`'s: a section's keys one by one, anything else
// whole. Moving a node keeps its source (file and line) for the errors.
void merge(toml::table& into, toml::table& from) {
  for (auto&& [k, v] : from) {
    toml::table* dst = into.get_as<toml::table>(k.str());
    toml::table* src = v.as_table();
    if (dst != nullptr && src != nullptr) {
      for (auto&& [sk, sv] : *src)
        dst->insert_or_assign(sk, std::move(sv));
    } else {
      into.insert_or_assign(k, std::move(v));
    }
  }
}

}  // namespace

std::vector<std::string> drop_ins(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path dir = path + ".d";
  if (!fs::is_directory(dir, ec))
    return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".toml") && name.front() != '.' && e.is_regular_file(ec))
      out.push_back(e.path().string());
  }
  // By file name, byte by byte (systemd's drop-in order).
  std::sort(out.begin(), out.end());
  return out;
}

Result<Config> load(const std::string& path, const InterfaceLookup& lookup) {
  auto text = read_text(path);
  if (!text)
    return text.error();
  auto root = detail::parse_toml(*text, path);
  if (!root)
    return root.error();
  for (const std::string& d : drop_ins(path)) {
    auto dtext = read_text(d);
    if (!dtext)
      return dtext.error();
    auto droot = detail::parse_toml(*dtext, d);
    if (!droot)
      return droot.error();
    merge(*root, *droot);
  }
  return detail::parse_table(*root, path, lookup);
}

}  // namespace rcnet::config
