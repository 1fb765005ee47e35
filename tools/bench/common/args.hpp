// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Command lines of the benchmark programs, parsed with CLI11.

#include <CLI/CLI.hpp>

namespace rcnet::bench {

// Parses argv into `app`'s options. Returns -1 when the program goes on;
// otherwise the status to exit with: 0 after --help (printed on stdout), 2
// after a bad argument (CLI11's message on stderr), as every benchmark
// program has always answered.
int parse_args(CLI::App& app, int argc, char** argv);

}  // namespace rcnet::bench
