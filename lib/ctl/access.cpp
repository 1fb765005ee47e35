// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl/access.hpp"

#include <algorithm>

namespace rcnet::ctl {

Access access_for(uid_t uid, std::span<const gid_t> groups, gid_t rcnet_gid) {
  if (uid == 0)
    return Access::kAdmin;
  if (std::find(groups.begin(), groups.end(), rcnet_gid) != groups.end())
    return Access::kRead;
  return Access::kDenied;
}

std::optional<std::string> authorize(Command c, Access access) {
  switch (access) {
    case Access::kAdmin:
      return std::nullopt;
    case Access::kRead:
      if (!is_mutating(c))
        return std::nullopt;
      return "\"" + std::string(to_string(c)) + "\" changes the daemon and needs root";
    case Access::kDenied:
      break;
  }
  return "permission denied: only root and members of the ctl group may use rcnetd's ctl socket";
}

}  // namespace rcnet::ctl
