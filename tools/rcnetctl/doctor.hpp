// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetctl doctor: checks this host against rcnetd's configuration without
// starting rcnetd (rcnetctl(8) "DOCTOR" lists every check, its advice, the
// exit status and the JSON). The checks read the host only through Host: a
// root directory under which /sys, /proc and /dev are read as files, and a
// table of functions for what is no file (rdma_cm, netlink, rlimits, sockets).
// system_host() is the real one (doctor_host.cpp); the unit tests
// (tests/unit/rcnetctl/doctor_test.cpp) fake both.
//
// Threading: single-threaded, like all of rcnetctl. Nothing here blocks
// longer than a netlink dump or an rdma_bind_addr(3).
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "util/address.hpp"
#include "util/result.hpp"

namespace rcnet::rcnetctl::doctor {

enum class Status : std::uint8_t { kPass, kWarn, kFail };
// "PASS", "WARN", "FAIL".
std::string_view to_string(Status s);

// One line of the report. `advice` is empty for PASS: what to do, a command
// or a setting, for WARN and FAIL.
struct Finding {
  std::string check;  // the check's name, one of rcnetctl(8) DOCTOR's
  Status status = Status::kPass;
  std::string found;   // what it found, one line
  std::string advice;  // what to do about it (WARN, FAIL)
  int rail = -1;       // the rail it is about (node.address's index), -1: none
};

// An address configured on a netdev (getifaddrs(3)).
struct NetdevAddress {
  std::string netdev;
  IpPrefix prefix;  // the address with its prefix length
};

// What rdma_cm says about an address: rdma_bind_addr(3) on a throwaway
// rdma_cm id binds it to the RDMA device and port that serve its netdev.
struct RdmaBinding {
  std::string device;  // ibv_get_device_name(3)
  std::uint8_t port = 0;
  bool iwarp = false;            // transport_type IBV_TRANSPORT_IWARP
  bool ethernet = false;         // link_layer IBV_LINK_LAYER_ETHERNET (RoCE, iWARP)
  bool active = false;           // port state IBV_PORT_ACTIVE
  std::string state;             // ibv_port_state_str(3)
  std::uint32_t active_mtu = 0;  // bytes (ibv_query_port(3)'s active_mtu)
};

// A route of the kernel's routing tables (libnl's route cache).
struct Route {
  IpPrefix dst;
  std::string netdev;  // the (first) nexthop's netdev; empty: none (blackhole, ...)
  std::string table;   // "main", "local" or the table's number
  std::string type;    // "unicast", "local", "blackhole", ...
};

// RLIMIT_MEMLOCK as rcnetd will get it.
struct Memlock {
  std::optional<std::uint64_t> bytes;  // nullopt: unlimited
  // Where the figure comes from: "LimitMEMLOCK of rcnetd.service (systemctl
  // show)", or "this shell's ulimit -l (systemd is not running)".
  std::string source;
};

struct Host {
  // /sys, /proc and /dev are read as ROOT + "sys/...": "/" for the host.
  std::string root = "/";
  // The netdevs' addresses, in this network namespace. Errors: getifaddrs'.
  std::function<Result<std::vector<NetdevAddress>>()> addresses;
  // rdma_bind_addr(3) of `ep` on a new rdma_cm id (RDMA_PS_TCP), destroyed
  // at once. Errors: the errno of rdma_create_id (ENODEV, ENOENT: no
  // rdma_cm) or rdma_bind_addr: EADDRNOTAVAIL (the address is on no
  // netdev), ENODEV (no RDMA device serves its netdev), EADDRINUSE (the
  // port is taken), EACCES (a port below 1024 without CAP_NET_BIND_SERVICE).
  std::function<Result<RdmaBinding>(const Endpoint& ep)> rdma_bind;
  // bind(2) of a TCP socket (SO_REUSEADDR) to `ep`, closed at once: the
  // TCP port space an iWARP listener shares. Errors: bind's errno.
  std::function<Result<void>(const Endpoint& ep)> tcp_bind;
  // Every route of every table in network namespace `netns` ("": ours;
  // else /run/netns/NAME, which needs CAP_SYS_ADMIN). Errors: libnl's,
  // as an errno value, or open/setns's.
  std::function<Result<std::vector<Route>>(const std::string& netns)> routes;
  // The unit's limit when systemd runs (`unit`: "rcnetd.service",
  // "rcnetd@NAME.service"), else this process's. Errors: sd-bus's.
  std::function<Result<Memlock>(const std::string& unit)> memlock;
  // The file the unit's LoadCredential= named `id` loads (`unit` as for
  // memlock): its path, a relative one looked up in the credential stores
  // (/etc/credstore, /run/credstore, /usr/lib/credstore) as systemd does;
  // nullopt when the unit has no such line. Errors: sd-bus's, or ENOSYS
  // when systemd is not running.
  std::function<Result<std::optional<std::string>>(const std::string& unit, const std::string& id)>
      credential_source;
  // The user the unit runs rcnetd as (User= of the shipped units): a key
  // file rcnetd opens itself must be this user's.
  std::string unit_user = "rcnet";
};

// The real host: "/", getifaddrs(3), librdmacm, a TCP socket, libnl-route-3,
// sd-bus (LimitMEMLOCK and LoadCredential of the unit) or getrlimit(2).
Host system_host();

// The unit that runs `config_path`: rcnetd@NAME.service for
// /etc/rcnet/NAME.toml (NAME not "rcnetd"), else rcnetd.service.
std::string unit_for(const std::string& config_path);

// Every check on `cfg` (as config::load() read `config_path`), in the
// order rcnetctl(8) lists them.
std::vector<Finding> run_checks(const config::Config& cfg, const std::string& config_path,
                                const Host& host);

// One line per finding ("FAIL  listen-port  rail 0: ...; fix: ..."), then
// a summary line.
void render_text(const std::vector<Finding>& findings, std::ostream& out);
// {"config": PATH, "ok": BOOL, "summary": {"pass": N, "warn": N, "fail": N},
//  "checks": [{"check", "status" ("pass", "warn", "fail"), "found",
//  "advice" (WARN, FAIL), "rail" (when about one)}]}, one line (indented
// by 2 with `pretty`).
void render_json(const std::vector<Finding>& findings, const std::string& config_path, bool pretty,
                 std::ostream& out);

// rcnetctl doctor: loads `config_path` (exit 2 with the loader's error,
// which names the file, line and key), runs the checks and prints them.
// Returns 0 when no check FAILed, 1 when one did.
int run(const std::string& config_path, bool as_json, bool pretty, const Host& host,
        std::ostream& out, std::ostream& err);

}  // namespace rcnet::rcnetctl::doctor
