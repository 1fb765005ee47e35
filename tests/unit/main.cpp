// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Catch2 main. Logs are quiet (warnings and up) unless RCNET_TEST_LOG names a
// spdlog level ("debug", "info", ...).
#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <cstdlib>
#include "catch2_compat.hpp"

int main(int argc, char* argv[]) {
  const char* level = std::getenv("RCNET_TEST_LOG");
  spdlog::set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::err);
  return Catch::Session().run(argc, argv);
}
