// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What rcnetctl doctor's checks share (doctor.hpp): the configuration, the
// host, the findings so far and what a rail's checks learnt for the node's
// checks after them. The checks are split by subject: a rail's RDMA stack
// (doctor_rail.cpp), the kernel's IP settings and routes (doctor_ip.cpp),
// the system around rcnetd (doctor_system.cpp: modules, daemons, limits,
// device nodes), the cluster key files (doctor_auth.cpp); doctor.cpp runs
// them in order and reports.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "doctor.hpp"

namespace rcnet::rcnetctl::doctor {

// The checks' names (rcnetctl(8) DOCTOR lists them in this order).
inline constexpr const char* kConfig = "config";
inline constexpr const char* kAuthKey = "auth-key";
inline constexpr const char* kModule = "module";
inline constexpr const char* kAddress = "address";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kPort = "port";
inline constexpr const char* kGid = "gid";
inline constexpr const char* kMtu = "mtu";
inline constexpr const char* kListenPort = "listen-port";
inline constexpr const char* kTcpPort = "tcp-port";
inline constexpr const char* kSysctl = "sysctl";
inline constexpr const char* kIwpmd = "iwpmd";
inline constexpr const char* kMemlock = "memlock";
inline constexpr const char* kDevNode = "dev-node";
inline constexpr const char* kRoute = "route";

// What a rail's checks learnt, for the checks of the whole node after them.
struct RailFacts {
  std::string netdev;                  // empty: the address is on no netdev
  std::optional<IpPrefix> subnet;      // the address with its netdev's prefix length
  std::optional<RdmaBinding> binding;  // the device serving it
};

// One run of the checks over one configuration and host.
class Doctor {
 public:
  Doctor(const config::Config& cfg, const std::string& path, const Host& host)
      : cfg_(cfg), path_(path), host_(host) {}

  // Every check, in rcnetctl(8)'s order.
  std::vector<Finding> run();

 private:
  void add(const char* check, Status s, std::string found, std::string advice = {}, int rail = -1) {
    out_.push_back(Finding{check, s, std::move(found), std::move(advice), rail});
  }

  // A file under the host's root, its first line without the newline.
  std::optional<std::string> read(const std::string& path) const;
  std::string at_root(const std::string& path) const { return host_.root + path; }

  std::string rail_name(std::size_t k) const;
  // "node.address" or "node.interface" (with [k] when a list), and its line.
  std::string address_key(std::size_t k) const;
  std::string where(const std::string& key) const;

  void check_config();

  // doctor_auth.cpp
  void check_auth();
  void check_auth_key(const config::AuthKeyRef& k, bool first, const std::string& unit);

  // doctor_rail.cpp
  void load_addresses();
  const NetdevAddress* find_address(const IpAddr& a) const;
  void check_rail(std::size_t k);
  std::string driver_of(const RdmaBinding& d) const;
  static std::string gid_text(const IpAddr& a);
  void check_gid(std::size_t k, const NetdevAddress& na, const RdmaBinding& d);
  void check_mtu(std::size_t k, const NetdevAddress& na, const RdmaBinding& d);
  void check_listen_port(std::size_t k, const Endpoint& ep, const RdmaBinding& d);

  // doctor_ip.cpp
  std::optional<int> conf(const std::string& netdev, const std::string& key, bool max) const;
  void check_sysctls(std::size_t k, const NetdevAddress& na);
  void check_routes();

  // doctor_system.cpp
  bool module_loaded(const std::string& name) const;
  void check_module(const std::string& name, const std::string& why, int rail = -1);
  void check_iwpmd(std::size_t k);
  static std::string bytes_text(std::uint64_t b);
  void check_memlock();
  void check_dev_node(const std::string& path, const std::string& missing_advice);
  void check_dev_nodes();

  const config::Config& cfg_;
  const std::string& path_;
  const Host& host_;
  std::vector<Finding> out_;
  std::vector<NetdevAddress> addresses_;
  std::string addresses_error_;
  std::vector<RailFacts> rails_;
};

}  // namespace rcnet::rcnetctl::doctor
