// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Startup before the Daemon: an underlay address that appears late (an
// InfiniBand port that comes up after rcnetd.service started, an address
// that DHCP or the network manager adds later) is waited for, not fatal
// (rcnetd(8) "STARTUP").

#include <optional>
#include <string>

#include "config/config.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

// What a rail's address still lacks, one line for the log and STATUS=
// ("node.address 10.99.0.1 is on no interface", "node.interface: ib0 has no
// address ..."); "" when every rail's address is on an interface of this
// network namespace.
std::string missing_underlay(const config::Config& cfg);

// Returns `cfg` at once when missing_underlay() is "". Otherwise logs once,
// sets the unit's STATUS= (sd_notify) and every kRetry loads `path` again
// (node.interface may resolve now; an edited file is read too) until
// nothing is missing. SIGTERM and SIGINT, which must be blocked, end the
// wait: nullopt (a clean exit). Errors: the file's config errors, as load().
inline constexpr int kUnderlayRetrySeconds = 1;
Result<std::optional<config::Config>> wait_for_underlay(const std::string& path,
                                                        config::Config cfg);

}  // namespace rcnet::daemon
