// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "args.hpp"

namespace rcnet::bench {

int parse_args(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return 0;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return -1;
}

}  // namespace rcnet::bench
