// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// An fd closed when it goes out of scope (rcnetctl's sockets and files).
#include <unistd.h>

namespace rcnet::rcnetctl {

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

}  // namespace rcnet::rcnetctl
