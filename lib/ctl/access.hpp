// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Who may use rcnetd's ctl socket for what (rcnetctl(8) "ACCESS"): root runs
// every command, members of the ctl group (ctl.group) the read-only ones
// (Effect::kReadOnly in kCommands), anyone else nothing.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ctl/commands.hpp"

namespace rcnet::ctl {

enum class Access : std::uint8_t { kDenied, kRead, kAdmin };

// From the peer's credentials (SO_PEERCRED uid; `groups` are its primary and
// supplementary gids, e.g. from SO_PEERGROUPS or /proc/PID/status): uid 0 →
// kAdmin; a member of `rcnet_gid` → kRead; anyone else → kDenied.
Access access_for(uid_t uid, std::span<const gid_t> groups, gid_t rcnet_gid);

// nullopt if `access` allows `c`; else the refusal message for a `forbidden` reply.
std::optional<std::string> authorize(Command c, Access access);

}  // namespace rcnet::ctl
