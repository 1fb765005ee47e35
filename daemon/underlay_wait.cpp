// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "underlay_wait.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <csignal>
#include <ctime>

namespace rcnet::daemon {

std::string missing_underlay(const config::Config& cfg) {
  if (!cfg.unresolved.empty())
    return "node.interface: " + cfg.unresolved;
  for (std::size_t k = 0; k < cfg.rail_count(); ++k) {
    const IpAddr& a = k == 0 ? cfg.manager.local.addr : cfg.rails[k].local.addr;
    if (!config::system_has_address(a)) {
      const std::string key = cfg.rail_interfaces.empty() ? "node.address" : "node.interface";
      return key + (cfg.rail_count() > 1 ? "[" + std::to_string(k) + "]" : "") + " " +
             a.to_string() + " is on no interface";
    }
  }
  return "";
}

Result<std::optional<config::Config>> wait_for_underlay(const std::string& path,
                                                        config::Config cfg) {
  std::string missing = missing_underlay(cfg);
  if (missing.empty())
    return std::optional<config::Config>(std::move(cfg));
  spdlog::warn("{} yet: waiting for it (checked every {} s)", missing, kUnderlayRetrySeconds);
  sd_notifyf(0, "STATUS=Waiting for the underlay address: %s", missing.c_str());
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  const timespec period{kUnderlayRetrySeconds, 0};
  for (;;) {
    const int sig = ::sigtimedwait(&set, nullptr, &period);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("{} while waiting for the underlay address: exiting", strsignal(sig));
      return std::optional<config::Config>();
    }
    if (sig < 0 && errno != EAGAIN && errno != EINTR)
      return Error::from_errno(errno, "sigtimedwait");
    auto next = config::load(path);
    if (!next)
      return next.error();
    const std::string now = missing_underlay(*next);
    if (now.empty()) {
      spdlog::info("underlay address present: starting");
      return std::optional<config::Config>(std::move(*next));
    }
    if (now != missing) {
      missing = now;
      spdlog::info("{} yet: still waiting", missing);
      sd_notifyf(0, "STATUS=Waiting for the underlay address: %s", missing.c_str());
    }
  }
}

}  // namespace rcnet::daemon
