// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "peer_cred.hpp"

#include <fmt/format.h>
#include <grp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace rcnet::daemon {

namespace {

// "Groups:\t10 27 1000" from /proc/PID/status (proc(5)).
std::vector<gid_t> proc_groups(pid_t pid) {
  std::vector<gid_t> out;
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Groups:", 0) != 0)
      continue;
    std::istringstream ss(line.substr(7));
    unsigned long g = 0;
    while (ss >> g)
      out.push_back(static_cast<gid_t>(g));
    break;
  }
  return out;
}

}  // namespace

Result<PeerCred> peer_credentials(int fd) {
  ucred uc{};
  socklen_t len = sizeof uc;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
    return Error::from_errno(errno, "getsockopt SO_PEERCRED");
  PeerCred c;
  c.pid = uc.pid;
  c.uid = uc.uid;
  c.gid = uc.gid;
  c.groups.push_back(uc.gid);
  // SO_PEERGROUPS is taken at connect(2), like SO_PEERCRED: no race with the
  // client changing its groups or its pid being reused, unlike /proc.
  std::vector<gid_t> sup(64);
  socklen_t glen = static_cast<socklen_t>(sup.size() * sizeof(gid_t));
  int rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, sup.data(), &glen);
  if (rc < 0 && errno == ERANGE) {
    sup.resize(glen / sizeof(gid_t) + 1);
    glen = static_cast<socklen_t>(sup.size() * sizeof(gid_t));
    rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, sup.data(), &glen);
  }
  if (rc == 0) {
    sup.resize(glen / sizeof(gid_t));
  } else {
    sup = proc_groups(uc.pid);
  }
  for (gid_t g : sup) {
    if (std::find(c.groups.begin(), c.groups.end(), g) == c.groups.end())
      c.groups.push_back(g);
  }
  return c;
}

std::optional<gid_t> lookup_group(const std::string& name) {
  if (name.empty())
    return std::nullopt;
  group gr{};
  group* found = nullptr;
  std::vector<char> buf(4096);
  for (;;) {
    const int rc = getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 4);
      continue;
    }
    if (rc != 0 || found == nullptr)
      return std::nullopt;
    return gr.gr_gid;
  }
}

}  // namespace rcnet::daemon
