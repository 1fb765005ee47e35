// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl: rcnetd's operator tool (rcnetctl(8)).
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto transport = [](const std::string& socket, const std::string& line) {
    return rcnet::rcnetctl::unix_socket_transport(socket, line);
  };
  auto stream = [](const std::string& socket, const std::string& line,
                   const rcnet::rcnetctl::LineSink& on_line) {
    return rcnet::rcnetctl::unix_socket_stream(socket, line, on_line);
  };
  return rcnet::rcnetctl::run(args, transport, std::cout, std::cerr, stream);
}
