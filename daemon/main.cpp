// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetd: command line, configuration, then the Daemon.
// Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
#include <spdlog/spdlog.h>
#include <sys/un.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "daemon.hpp"
#include "logging.hpp"
#include "rcnet_build_config.h"
#include "underlay_wait.hpp"

namespace {
constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
}  // namespace

int main(int argc, char** argv) {
  using namespace rcnet;
  CLI::App app{"rcnetd: IP over RDMA reliable-connected QPs (IPoIB-CM style)", "rcnetd"};
  std::string config_path = "/etc/rcnet/rcnetd.toml";
  bool check_config = false;
  bool version = false;
  std::string log_level;
  std::string log_target;
  std::string ctl_socket;
  app.add_option("-c,--config", config_path, "configuration file")->capture_default_str();
  app.add_flag("--check-config", check_config, "parse and validate the configuration, then exit");
  app.add_option("--log-level", log_level, config::log_level_list() + " (overrides log.level)");
  app.add_option("--log-target", log_target, config::log_target_list() + " (overrides log.target)");
  app.add_option("--ctl-socket", ctl_socket,
                 "ctl socket path (overrides ctl.socket, also across reloads)");
  app.add_flag("--version", version, "print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (version) {
    std::printf("rcnetd %s\n", RCNET_VERSION);
    return kExitOk;
  }

  daemon::DaemonOptions opts;
  opts.config_path = config_path;
  if (!log_level.empty()) {
    opts.log_level = config::parse_log_level(log_level);
    if (!opts.log_level) {
      std::fprintf(stderr, "rcnetd: --log-level: unknown level '%s'\n", log_level.c_str());
      return kExitUsage;
    }
  }
  if (!log_target.empty()) {
    opts.log_target = daemon::parse_log_target(log_target);
    if (!opts.log_target) {
      std::fprintf(stderr, "rcnetd: --log-target: expected %s, not '%s'\n",
                   config::log_target_list().c_str(), log_target.c_str());
      return kExitUsage;
    }
  }

  // Configuration errors end here, before any device is touched.
  auto cfg = config::load(config_path);
  if (!cfg) {
    // Validation errors are complete in their context ("file:line: key: ...");
    // I/O errors need the errno text too.
    const auto& e = cfg.error();
    const std::string text = e.code == std::errc::invalid_argument ? e.context : e.message();
    std::fprintf(stderr, "rcnetd: %s\n", text.c_str());
    return kExitUsage;
  }
  if (!ctl_socket.empty()) {
    // The same rule as ctl.socket in the file (rcnetd.toml(5)), so that
    // --check-config with the unit's arguments catches a bad path.
    if (ctl_socket.front() != '/' || ctl_socket.size() >= sizeof(sockaddr_un::sun_path)) {
      std::fprintf(stderr,
                   "rcnetd: --ctl-socket: expected an absolute path shorter than %zu bytes\n",
                   sizeof(sockaddr_un::sun_path));
      return kExitUsage;
    }
    cfg->ctl_socket = ctl_socket;
    cfg->origins["ctl.socket"] = config::Origin{"--ctl-socket", 0};
    opts.ctl_socket = ctl_socket;
  }
  if (check_config) {
    // The merged file with each value's origin, then the verdict (last, so
    // that a script reads one line with tail -1).
    std::printf("# rcnetd --check-config: %s", config_path.c_str());
    for (const std::string& d : config::drop_ins(config_path))
      std::printf(" + %s", d.c_str());
    std::printf("\n%s", config::show(*cfg).c_str());
    if (!cfg->unresolved.empty()) {
      std::printf(
          "# node.interface: %s yet; rcnetd waits for it when it starts and checks the "
          "addresses then\n",
          cfg->unresolved.c_str());
    }
    std::printf("rcnetd: %s: configuration OK\n", config_path.c_str());
    return kExitOk;
  }

  daemon::setup_logging(opts.log_target.value_or(cfg->log_target),
                        opts.log_level.value_or(cfg->log_level));

  // Blocked before anything else exists, so sd-event can take them over a
  // signalfd (sd_event_add_signal(3)).
  if (auto r = daemon::block_signals({SIGTERM, SIGINT, SIGHUP}); !r) {
    spdlog::critical("{}", r.error().message());
    return kExitRuntime;
  }

  // An underlay address that is not there yet (a port still coming up) is
  // waited for; --ctl-socket applies to the file as read again.
  auto ready = daemon::wait_for_underlay(config_path, std::move(*cfg));
  if (!ready) {
    const auto& e = ready.error();
    spdlog::error("{}", e.code == std::errc::invalid_argument ? e.context : e.message());
    return e.code == std::errc::invalid_argument ? kExitUsage : kExitRuntime;
  }
  if (!*ready)
    return kExitOk;
  config::Config started = std::move(**ready);
  if (!ctl_socket.empty())
    started.ctl_socket = ctl_socket;

  auto d = daemon::Daemon::create(std::move(started), std::move(opts));
  if (!d) {
    spdlog::error("{}", d.error().message());
    return kExitRuntime;
  }
  return (*d)->run();
}
