// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Small helpers the VerbsSeam's files (verbs_seam.cpp, verbs_open.cpp) and
// VerbsDevice share.
#include <fcntl.h>

#include <cerrno>
#include <string>

#include "util/result.hpp"

namespace rcnet::rdma {

// Sets O_NONBLOCK on `fd`; the error of fcntl(2) names `what`.
inline Result<void> set_nonblocking(int fd, const char* what) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Error::from_errno(errno, std::string("fcntl O_NONBLOCK on ") + what);
  }
  return {};
}

// `e` with `ctx` in front of its context.
inline Error with_context(Error e, const std::string& ctx) {
  e.context = ctx + ": " + e.context;
  return e;
}

}  // namespace rcnet::rdma
