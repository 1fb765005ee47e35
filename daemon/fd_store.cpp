// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "fd_store.hpp"

#include <fcntl.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>

namespace rcnet::daemon {

FdStore FdStore::from_environment() {
  FdStore s;
  char** names = nullptr;
  // unset_environment: a child (none today) would not take them for its own.
  const int n = sd_listen_fds_with_names(1, &names);
  for (int i = 0; i < n; ++i) {
    const int fd = SD_LISTEN_FDS_START + i;
    (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
    std::string name = names != nullptr && names[i] != nullptr ? names[i] : "unknown";
    // A name stored twice (not done by rcnetd): the first is kept.
    s.fds_.try_emplace(std::move(name), fd);
    ++s.passed_;
  }
  if (names != nullptr) {
    for (int i = 0; i < n; ++i)
      std::free(names[i]);
    std::free(static_cast<void*>(names));
  }
  return s;
}

UniqueFd FdStore::take(std::string_view name) {
  const auto it = fds_.find(name);
  if (it == fds_.end())
    return UniqueFd();
  UniqueFd fd = std::move(it->second);
  fds_.erase(it);
  return fd;
}

bool FdStore::store(int fd, std::string_view name) {
  const std::string state = "FDSTORE=1\nFDNAME=" + std::string(name);
  // > 0: sent; 0: no NOTIFY_SOCKET; < 0: -errno.
  return sd_pid_notify_with_fds(0, 0, state.c_str(), &fd, 1) > 0;
}

void FdStore::remove(std::string_view name) {
  const std::string state = "FDSTOREREMOVE=1\nFDNAME=" + std::string(name);
  (void)sd_notify(0, state.c_str());
}

}  // namespace rcnet::daemon
