// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "report.hpp"

#include <cerrno>
#include <cstdio>

namespace rcnet::bench {

bool write_file(const std::string& path, std::string_view text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return false;
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !written) {
    if (!written)
      errno = err;
    return false;
  }
  return true;
}

bool print_summary(const nlohmann::json& j, const std::string& path, int indent,
                   std::string_view prefix) {
  const std::string text = j.dump(indent);
  std::printf("%.*s%s\n", static_cast<int>(prefix.size()), prefix.data(), text.c_str());
  std::fflush(stdout);
  return path.empty() || write_file(path, text + "\n");
}

}  // namespace rcnet::bench
