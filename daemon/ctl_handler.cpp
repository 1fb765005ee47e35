// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl_handler.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "config/keys.hpp"
#include "ctl/views.hpp"
#include "ctl_server.hpp"  // CtlCounters
#include "logging.hpp"
#include "rcnet_build_config.h"
#include "rdma_audit.hpp"

namespace rcnet::daemon {

using ctl::json;

// --- Request handling -------------------------------------------------------------

HandledRequest handle_request(std::string_view line, ctl::Access access, CtlBackend& backend,
                              const CtlCounters* ctl) {
  try {
    // A stranger learns nothing, not even whether its request parses.
    if (access == ctl::Access::kDenied) {
      return {ctl::error_reply(ctl::ErrorCode::kForbidden,
                               ctl::authorize(ctl::Command::kStatus, access).value_or("forbidden")),
              true};
    }
    auto req = ctl::parse_request(line);
    if (!req)
      return {ctl::error_reply(req.error()), true};
    if (auto why = ctl::authorize(req->cmd, access))
      return {ctl::error_reply(ctl::ErrorCode::kForbidden, *why), true};
    ctl::Context ctx{backend};
    if (ctl != nullptr)
      ctx.server_counters = [ctl] { return ctl::counters_json(*ctl); };
    return ctl::info(req->cmd).handle(*req, ctx);
  } catch (const std::exception& e) {
    // Allocation or a JSON type error: answer, never unwind into the loop.
    return {ctl::error_reply(ctl::ErrorCode::kFailed, std::string("internal error: ") + e.what())};
  }
}

// --- Over the daemon's parts ---------------------------------------------------------

namespace {

// glibc's heap, summed over its arenas (mallinfo2(3), glibc 2.33 and
// later): the bytes rcnetd's allocations hold (uordblks, plus hblkhd: the
// chunks mmap'ed one by one) and the bytes the allocator holds from the
// kernel (arena + hblkhd). An RSS that grows while in_use_bytes stays flat
// is the allocator keeping freed memory, not a leak. Walks the free lists:
// a few microseconds, per status request only.
json heap_status() {
  const struct mallinfo2 mi = ::mallinfo2();
  return {{"in_use_bytes", mi.uordblks + mi.hblkhd}, {"arena_bytes", mi.arena + mi.hblkhd}};
}

class DaemonBackend final : public CtlBackend {
 public:
  explicit DaemonBackend(CtlDaemonParts parts) : p_(std::move(parts)) {}

  void stopping() override { stopping_ = true; }

  cm::Snapshot snapshot() const override { return p_.snapshot(); }

  json daemon_status() const override {
    const config::Config& c = p_.config;
    return {
        {"version", RCNET_VERSION},
        {"pid", ::getpid()},
        // From the Daemon's construction, not the ctl server's: the time
        // spent bringing the device, listener and TUN up counts as uptime.
        {"uptime_ms", to_ms(Clock::now() - p_.start_time)},
        // The same moment on the wall clock (seconds since the Unix epoch),
        // for rcnet_start_time_seconds.
        {"start_time_s",
         std::chrono::duration<double>(
             (std::chrono::system_clock::now() - (Clock::now() - p_.start_time)).time_since_epoch())
             .count()},
        {"config_path", p_.config_path},
        {"tun",
         {{"name", c.tun_name},
          {"address", c.tun_address.to_string()},
          {"address6", c.tun_address6 ? json(c.tun_address6->to_string()) : json(nullptr)},
          {"netns", c.tun_netns}}},
        {"stopping", stopping_},
        {"log_level", config::to_string(log_level())},
        {"status", p_.status_text()},
        {"rdma_monitor", p_.rdma_monitor ? json(p_.rdma_monitor()) : json(nullptr)},
        {"heap", heap_status()},
    };
  }

  json daemon_counters() const override { return ctl::counters_json(p_.tun_counters); }

  const config::Config& config() const override { return p_.config; }

  // One rail: its report. More: rail 0's report, "ok" only when every
  // rail's is, and each rail's whole report under "rails".
  Result<json> audit() override {
    json all = json::array();
    json first;
    bool ok = true;
    for (const auto& r : p_.rails) {
      // Rails on one device: the kernel's QPs of the others are theirs.
      std::vector<std::uint32_t> others;
      for (const auto& o : p_.rails) {
        if (&o != &r && o.seam->device() && o.seam->device() == r.seam->device()) {
          const auto q = o.seam->qpns();
          others.insert(others.end(), q.begin(), q.end());
        }
      }
      auto one =
          audit_qps(r.manager->snapshot().device, r.manager->live_qpns(), r.seam->qpns(), others);
      if (!one)
        return one.error();
      ok = ok && one->value("ok", false);
      if (first.is_null())
        first = *one;
      all.push_back(std::move(*one));
    }
    if (p_.rails.size() > 1) {
      first["ok"] = ok;
      first["rails"] = std::move(all);
    }
    return first;
  }

  bool disconnect(NodeId node, std::string_view why) override {
    bool any = false;
    for (auto& r : p_.rails)
      any = r.manager->disconnect_peer(node, why) || any;
    return any;
  }
  std::size_t reap(Duration idle) override {
    std::size_t n = 0;
    for (auto& r : p_.rails)
      n += r.manager->reap_idle(idle);
    return n;
  }
  config::LogLevel log_level() const override {
    return from_spdlog(spdlog::default_logger_raw()->level());
  }
  void set_log_level(config::LogLevel level) override {
    rcnet::daemon::set_log_level(level);
    spdlog::info("log level set to {}", config::to_string(level));
  }
  Result<std::vector<std::string>> reload() override {
    if (!p_.reload)
      return CtlBackend::reload();
    // The keys that changed: the running config's rows before and after.
    const json before = ctl::config_json(p_.config);
    if (auto r = p_.reload(); !r) {
      // As the SIGHUP path logs it: the journal says why, whoever asked.
      spdlog::warn("reload (rcnetctl): {}", r.error().context);
      return r.error();
    }
    const json after = ctl::config_json(p_.config);
    std::vector<std::string> changed;
    for (const config::Key& k : config::keys()) {
      const std::string key(k.dotted);
      if (before.value(key, json()) != after.value(key, json()))
        changed.push_back(key);
    }
    return changed;
  }

 private:
  CtlDaemonParts p_;
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<CtlBackend> make_daemon_backend(CtlDaemonParts parts) {
  return std::make_unique<DaemonBackend>(std::move(parts));
}

}  // namespace rcnet::daemon
