// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// A move-only owner of one file descriptor. close(2) errors are ignored on
// purpose: after close the fd is released whatever it returns (close(2),
// "Dealing with error returns"), and retrying could close someone else's fd.
#include <unistd.h>

#include <utility>

namespace rcnet::daemon {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o)
      reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    const int old = std::exchange(fd_, fd);
    if (old >= 0)
      ::close(old);
  }

 private:
  int fd_ = -1;
};

}  // namespace rcnet::daemon
