// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A benchmark's results as JSON: on stdout, where the lab scripts read them,
// and in the file its --json (or --summary) option names.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace rcnet::bench {

// Writes `text` to `path` (created or truncated). False when it could not be
// opened, written or closed: errno says why.
bool write_file(const std::string& path, std::string_view text);

// Prints `prefix` + j.dump(indent) and a newline on stdout, flushed (indent
// -1: one line), and writes j.dump(indent) and a newline to `path` unless it
// is empty. False when the file could not be written (errno says why).
bool print_summary(const nlohmann::json& j, const std::string& path, int indent = -1,
                   std::string_view prefix = {});

}  // namespace rcnet::bench
