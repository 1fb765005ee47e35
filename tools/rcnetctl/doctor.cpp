// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor (doctor.hpp; rcnetctl(8) "DOCTOR"): runs the checks in
// order and reports them. Each check reads the host through Host only and
// says what it found and, when it is not PASS, what to do; the checks
// themselves sit by subject beside this file (doctor_checks.hpp).
#include "doctor.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "ctl/protocol.hpp"
#include "doctor_checks.hpp"

namespace rcnet::rcnetctl::doctor {

namespace fs = std::filesystem;

std::string_view to_string(Status s) {
  switch (s) {
    case Status::kPass:
      return "PASS";
    case Status::kWarn:
      return "WARN";
    case Status::kFail:
      return "FAIL";
  }
  return "?";
}

std::string unit_for(const std::string& config_path) {
  const fs::path p(config_path);
  if (p.parent_path() == "/etc/rcnet" && p.extension() == ".toml" && p.stem() != "rcnetd")
    return "rcnetd@" + p.stem().string() + ".service";
  return "rcnetd.service";
}

std::vector<Finding> Doctor::run() {
  check_config();
  check_auth();
  for (const char* m : {"rdma_ucm", "ib_uverbs"})
    check_module(m, "");
  load_addresses();
  rails_.resize(cfg_.rail_count());
  for (std::size_t k = 0; k < cfg_.rail_count(); ++k)
    check_rail(k);
  check_memlock();
  check_dev_nodes();
  check_routes();
  return std::move(out_);
}

std::optional<std::string> Doctor::read(const std::string& path) const {
  std::ifstream f(host_.root + path);
  std::string line;
  if (!f || !std::getline(f, line))
    return std::nullopt;
  return line;
}

std::string Doctor::rail_name(std::size_t k) const {
  return cfg_.rail_count() > 1 ? "rail " + std::to_string(k) + ": " : "";
}

std::string Doctor::address_key(std::size_t k) const {
  const std::string base = cfg_.rail_interfaces.empty() ? "node.address" : "node.interface";
  std::string key = base + "[" + std::to_string(k) + "]";
  if (cfg_.origins.find(key) == cfg_.origins.end())
    key = base;
  return key + where(key);
}

std::string Doctor::where(const std::string& key) const {
  auto it = cfg_.origins.find(key);
  if (it == cfg_.origins.end() || it->second.line == 0)
    return "";
  return " (" + it->second.file + ":" + std::to_string(it->second.line) + ")";
}

void Doctor::check_config() {
  std::string rails;
  for (const config::RailConfig& r : cfg_.rails)
    rails += (rails.empty() ? "" : ", ") + r.local.to_string();
  add(kConfig, Status::kPass,
      path_ + ": " + std::to_string(cfg_.rail_count()) +
          (cfg_.rail_count() == 1 ? " rail (" : " rails (") + rails + "), tun.address " +
          cfg_.tun_address.to_string() + ", tun.mtu " + std::to_string(cfg_.manager.mtu));
}

std::vector<Finding> run_checks(const config::Config& cfg, const std::string& config_path,
                                const Host& host) {
  return Doctor(cfg, config_path, host).run();
}

void render_text(const std::vector<Finding>& findings, std::ostream& out) {
  std::size_t width = 0;
  int n[3] = {0, 0, 0};
  for (const Finding& f : findings)
    width = std::max(width, f.check.size());
  for (const Finding& f : findings) {
    ++n[static_cast<int>(f.status)];
    out << to_string(f.status) << "  " << f.check << std::string(width - f.check.size(), ' ')
        << "  " << f.found;
    if (!f.advice.empty())
      out << "; fix: " << f.advice;
    out << "\n";
  }
  out << n[0] << " passed, " << n[1] << " warnings, " << n[2] << " failed\n";
}

void render_json(const std::vector<Finding>& findings, const std::string& config_path, bool pretty,
                 std::ostream& out) {
  ctl::json checks = ctl::json::array();
  int n[3] = {0, 0, 0};
  for (const Finding& f : findings) {
    ++n[static_cast<int>(f.status)];
    std::string status(to_string(f.status));
    std::transform(status.begin(), status.end(), status.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    ctl::json c = {{"check", f.check}, {"status", status}, {"found", f.found}};
    if (!f.advice.empty())
      c["advice"] = f.advice;
    if (f.rail >= 0)
      c["rail"] = f.rail;
    checks.push_back(std::move(c));
  }
  ctl::json j = {{"config", config_path},
                 {"ok", n[2] == 0},
                 {"summary", {{"pass", n[0]}, {"warn", n[1]}, {"fail", n[2]}}},
                 {"checks", std::move(checks)}};
  out << j.dump(pretty ? 2 : -1, ' ', false, ctl::json::error_handler_t::replace) << "\n";
}

int run(const std::string& config_path, bool as_json, bool pretty, const Host& host,
        std::ostream& out, std::ostream& err) {
  // node.interface is resolved from the host's addresses, as rcnetd does.
  // An interface exists when sysfs has it (it may have no address yet).
  config::InterfaceLookup lookup =
      [&host](const std::string& ifname) -> std::optional<std::vector<IpAddr>> {
    std::error_code ec;
    if (!fs::exists(host.root + "sys/class/net/" + ifname, ec))
      return std::nullopt;
    std::vector<IpAddr> addrs;
    auto a = host.addresses ? host.addresses()
                            : Result<std::vector<NetdevAddress>>(std::vector<NetdevAddress>{});
    if (a) {
      for (const NetdevAddress& n : *a) {
        if (n.netdev == ifname)
          addrs.push_back(n.prefix.addr);
      }
    }
    return addrs;
  };
  auto cfg = config::load(config_path, lookup);
  if (!cfg) {
    // As rcnetd says it: a validation error's context names file, line and key.
    const Error& e = cfg.error();
    err << "rcnetctl: doctor: " << (e.code == std::errc::invalid_argument ? e.context : e.message())
        << "\n";
    return 2;
  }
  const std::vector<Finding> findings = run_checks(*cfg, config_path, host);
  if (as_json)
    render_json(findings, config_path, pretty, out);
  else
    render_text(findings, out);
  const bool failed = std::any_of(findings.begin(), findings.end(),
                                  [](const Finding& f) { return f.status == Status::kFail; });
  return failed ? 1 : 0;
}

}  // namespace rcnet::rcnetctl::doctor
