// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Who is on the other end of a Unix socket, and which gid a group name has:
// what the ctl server decides access from (ctl::access_for, ctl_server.hpp).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace rcnet::daemon {

// A connected client's credentials (socket(7) SO_PEERCRED, SO_PEERGROUPS).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // primary gid first, then the supplementary ones
};
// Errors: getsockopt(2) SO_PEERCRED. The supplementary groups come from
// SO_PEERGROUPS (Linux 4.13), else from /proc/PID/status; without either,
// only the primary gid is known (a member of ctl.group only through a
// supplementary group is then refused, never wrongly admitted).
Result<PeerCred> peer_credentials(int fd);

// The gid of group `name`, or nullopt when it does not exist. NSS lookup: may
// block on a remote directory, so it runs at startup and on reload only.
std::optional<gid_t> lookup_group(const std::string& name);

}  // namespace rcnet::daemon
