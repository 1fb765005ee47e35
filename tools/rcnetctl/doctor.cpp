// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's checks (doctor.hpp; rcnetctl(8) "DOCTOR"). Each check
// reads the host through Host only and says what it found and, when it is
// not PASS, what to do.
#include "doctor.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cm/manager.hpp"
#include "ctl/protocol.hpp"

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

namespace {

// The checks' names (rcnetctl(8) DOCTOR lists them in this order).
constexpr const char* kConfig = "config";
constexpr const char* kModule = "module";
constexpr const char* kAddress = "address";
constexpr const char* kDevice = "device";
constexpr const char* kPort = "port";
constexpr const char* kGid = "gid";
constexpr const char* kMtu = "mtu";
constexpr const char* kListenPort = "listen-port";
constexpr const char* kTcpPort = "tcp-port";
constexpr const char* kSysctl = "sysctl";
constexpr const char* kIwpmd = "iwpmd";
constexpr const char* kMemlock = "memlock";
constexpr const char* kDevNode = "dev-node";
constexpr const char* kRoute = "route";

// What a rail's checks learnt, for the checks of the whole node after them.
struct RailFacts {
  std::string netdev;                  // empty: the address is on no netdev
  std::optional<IpPrefix> subnet;      // the address with its netdev's prefix length
  std::optional<RdmaBinding> binding;  // the device serving it
};

// `p` with its host bits zero: the subnet as ip(8) prints it.
IpPrefix network_of(const IpPrefix& p) {
  IpPrefix n = p;
  for (std::size_t i = p.length; i < n.addr.size() * 8; ++i)
    n.addr.bytes[i / 8] = static_cast<std::uint8_t>(n.addr.bytes[i / 8] & ~(0x80u >> (i % 8)));
  return n;
}

class Doctor {
 public:
  Doctor(const config::Config& cfg, const std::string& path, const Host& host)
      : cfg_(cfg), path_(path), host_(host) {}

  std::vector<Finding> run() {
    check_config();
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

 private:
  void add(const char* check, Status s, std::string found, std::string advice = {}, int rail = -1) {
    out_.push_back(Finding{check, s, std::move(found), std::move(advice), rail});
  }

  // A file under the host's root, its first line without the newline.
  std::optional<std::string> read(const std::string& path) const {
    std::ifstream f(host_.root + path);
    std::string line;
    if (!f || !std::getline(f, line))
      return std::nullopt;
    return line;
  }
  std::string at_root(const std::string& path) const { return host_.root + path; }

  std::string rail_name(std::size_t k) const {
    return cfg_.rail_count() > 1 ? "rail " + std::to_string(k) + ": " : "";
  }
  // "node.address" or "node.interface" (with [k] when a list), and its line.
  std::string address_key(std::size_t k) const {
    const std::string base = cfg_.rail_interfaces.empty() ? "node.address" : "node.interface";
    std::string key = base + "[" + std::to_string(k) + "]";
    if (cfg_.origins.find(key) == cfg_.origins.end())
      key = base;
    return key + where(key);
  }
  std::string where(const std::string& key) const {
    auto it = cfg_.origins.find(key);
    if (it == cfg_.origins.end() || it->second.line == 0)
      return "";
    return " (" + it->second.file + ":" + std::to_string(it->second.line) + ")";
  }

  void check_config() {
    std::string rails;
    for (const config::RailConfig& r : cfg_.rails)
      rails += (rails.empty() ? "" : ", ") + r.local.to_string();
    add(kConfig, Status::kPass,
        path_ + ": " + std::to_string(cfg_.rail_count()) +
            (cfg_.rail_count() == 1 ? " rail (" : " rails (") + rails + "), tun.address " +
            cfg_.tun_address.to_string() + ", tun.mtu " + std::to_string(cfg_.manager.mtu));
  }

  // Loaded: a line in /proc/modules, or built in (/sys/module/NAME without
  // the initstate a loadable module has).
  bool module_loaded(const std::string& name) const {
    std::ifstream f(at_root("proc/modules"));
    for (std::string line; std::getline(f, line);) {
      if (line.starts_with(name + " "))
        return true;
    }
    std::error_code ec;
    return fs::is_directory(at_root("sys/module/" + name), ec) &&
           !fs::exists(at_root("sys/module/" + name + "/initstate"), ec);
  }

  void check_module(const std::string& name, const std::string& why, int rail = -1) {
    if (module_loaded(name)) {
      add(kModule, Status::kPass, name + " loaded" + why, {}, rail);
      return;
    }
    add(kModule, Status::kFail, name + " is not loaded" + why,
        "modprobe " + name + ", and to load it at boot: echo " + name +
            " >> /etc/modules-load.d/rcnet.conf",
        rail);
  }

  void load_addresses() {
    if (!host_.addresses)
      return;
    auto a = host_.addresses();
    if (a)
      addresses_ = std::move(*a);
    else
      addresses_error_ = a.error().message();
  }

  const NetdevAddress* find_address(const IpAddr& a) const {
    for (const NetdevAddress& n : addresses_) {
      if (n.prefix.addr == a)
        return &n;
    }
    return nullptr;
  }

  void check_rail(std::size_t k) {
    const int rail = static_cast<int>(k);
    const std::string rn = rail_name(k);
    const Endpoint& ep = cfg_.rails[k].local;
    if (!cfg_.unresolved.empty()) {
      add(kAddress, Status::kFail, rn + cfg_.unresolved + " (" + address_key(k) + ")",
          "give that interface this node's underlay address (ip addr add ADDR/LEN dev "
          "IFACE), or fix node.interface",
          rail);
      return;
    }
    const NetdevAddress* na = find_address(ep.addr);
    if (na == nullptr) {
      add(kAddress, Status::kFail,
          rn + ep.addr.to_string() + " (" + address_key(k) + ") is on no netdev" +
              (addresses_error_.empty() ? "" : " (" + addresses_error_ + ")"),
          "add it to the RDMA port's netdev (ip addr add " + ep.addr.to_string() +
              "/LEN dev NETDEV), or set " + address_key(k) + " to an address of this node",
          rail);
      return;
    }
    RailFacts& f = rails_[k];
    f.netdev = na->netdev;
    f.subnet = na->prefix;
    add(kAddress, Status::kPass, rn + na->prefix.to_string() + " on " + na->netdev, {}, rail);

    // The device: rdma_cm's own answer (port 0: any free port, so that a
    // taken listen port does not hide the device).
    auto b = host_.rdma_bind ? host_.rdma_bind(Endpoint{ep.addr, 0})
                             : Result<RdmaBinding>(Error::from_errno(ENOSYS, "rdma_cm"));
    if (!b) {
      const int e = b.error().code.value();
      std::string advice;
      if (b.error().context.starts_with("rdma_create_id"))
        advice = "load rdma_ucm (modprobe rdma_ucm) and check /dev/infiniband/rdma_cm";
      else if (e == ENODEV)
        advice = "load the RDMA driver of " + na->netdev +
                 "'s NIC (e.g. modprobe mlx5_ib), or for Soft-RoCE: rdma link add rxe_" +
                 na->netdev + " type rxe netdev " + na->netdev;
      else
        advice = "see rdma link show, and dmesg for the RDMA driver";
      add(kDevice, Status::kFail,
          rn + "no RDMA device serves " + ep.addr.to_string() + " on " + na->netdev + " (" +
              b.error().message() + ")",
          advice, rail);
      return;
    }
    f.binding = *b;
    const RdmaBinding& d = *b;
    const std::string kind = d.iwarp ? "iWARP" : d.ethernet ? "RoCE" : "InfiniBand";
    add(kDevice, Status::kPass,
        rn + na->netdev + " is served by " + d.device + " port " + std::to_string(d.port) + " (" +
            kind + ")",
        {}, rail);
    check_module(driver_of(d), " (the driver of " + d.device + ")", rail);

    // A port can stay ACTIVE without carrier: Soft-iWARP follows only its
    // netdev's up and down, not the carrier (lab: b_1 down left siw_1
    // ACTIVE, rxe_1 DOWN). sysfs's carrier (Documentation/ABI/testing/
    // sysfs-class-net) is "0" then; unreadable on a netdev that is down.
    const bool no_carrier = d.ethernet && read("sys/class/net/" + na->netdev + "/carrier") == "0";
    if (d.active && no_carrier) {
      add(kPort, Status::kFail,
          rn + d.device + " port " + std::to_string(d.port) + " is ACTIVE but " + na->netdev +
              " has no carrier",
          "check the cable and the switch port of " + na->netdev + " (ip link show " + na->netdev +
              " says NO-CARRIER)",
          rail);
    } else if (d.active) {
      add(kPort, Status::kPass, rn + d.device + " port " + std::to_string(d.port) + " is ACTIVE",
          {}, rail);
    } else {
      add(kPort, Status::kFail,
          rn + d.device + " port " + std::to_string(d.port) + " is " + d.state + ", not ACTIVE",
          d.ethernet ? "bring " + na->netdev + " up with carrier (ip link set " + na->netdev +
                           " up; check the cable and the switch port): rdma link show " + d.device
                     : "check the cable and that a subnet manager runs on the fabric (ibstat " +
                           d.device + ", opensm)",
          rail);
    }
    check_gid(k, *na, d);
    check_mtu(k, *na, d);
    check_listen_port(k, ep, d);
    if (ep.addr.is_v4())
      check_sysctls(k, *na);
    if (d.iwarp)
      check_iwpmd(k);
  }

  // The kernel module of device `d`: its parent device's driver, or for a
  // device without a parent (Soft-RoCE, Soft-iWARP) the software driver of
  // its transport.
  std::string driver_of(const RdmaBinding& d) const {
    std::error_code ec;
    const fs::path link =
        fs::read_symlink(at_root("sys/class/infiniband/" + d.device + "/device/driver/module"), ec);
    if (!ec && !link.filename().empty())
      return link.filename().string();
    return d.iwarp ? "siw" : "rdma_rxe";
  }

  // The GID a RoCE v2 REQ carries: the IPv4-mapped or IPv6 address, as
  // sysfs prints it ("0000:0000:0000:0000:0000:ffff:0a63:0001").
  static std::string gid_text(const IpAddr& a) {
    std::uint8_t g[16] = {};
    if (a.is_v4()) {
      g[10] = g[11] = 0xff;
      std::copy(a.bytes.begin(), a.bytes.begin() + 4, g + 12);
    } else {
      std::copy(a.bytes.begin(), a.bytes.begin() + 16, g);
    }
    char buf[40];
    std::snprintf(buf, sizeof buf,
                  "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0],
                  g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13],
                  g[14], g[15]);
    return buf;
  }

  void check_gid(std::size_t k, const NetdevAddress& na, const RdmaBinding& d) {
    const int rail = static_cast<int>(k);
    const std::string rn = rail_name(k);
    if (d.iwarp) {
      add(kGid, Status::kPass, rn + "iWARP: connections go over TCP, no GID to check", {}, rail);
      return;
    }
    if (!d.ethernet) {
      add(kGid, Status::kPass,
          rn + "InfiniBand: rdma_cm resolves " + na.prefix.addr.to_string() +
              " over IPoIB, no RoCE GID to check",
          {}, rail);
      return;
    }
    const std::string want = gid_text(na.prefix.addr);
    const std::string port =
        "sys/class/infiniband/" + d.device + "/ports/" + std::to_string(d.port);
    std::optional<std::string> v2, v1;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(at_root(port + "/gids"), ec)) {
      const std::string idx = e.path().filename().string();
      if (read(port + "/gids/" + idx) != want)
        continue;
      const std::string type = read(port + "/gid_attrs/types/" + idx).value_or("");
      if (type == "RoCE v2")
        v2 = idx;
      else
        v1 = idx;
    }
    if (v2) {
      add(kGid, Status::kPass,
          rn + d.device + " port " + std::to_string(d.port) + " has RoCE v2 GID index " + *v2 +
              " for " + na.prefix.addr.to_string(),
          {}, rail);
    } else if (v1) {
      add(kGid, Status::kWarn,
          rn + d.device + " has only a RoCE v1 GID (index " + *v1 + ") for " +
              na.prefix.addr.to_string(),
          "rdma_cm connects with RoCE v2 by default: cma_roce_mode -d " + d.device + " -p " +
              std::to_string(d.port) + " -m 2, and check the NIC's RoCE v2 support",
          rail);
    } else {
      add(kGid, Status::kFail,
          rn + d.device + " port " + std::to_string(d.port) + " has no GID for " +
              na.prefix.addr.to_string() + " (" + want + ")",
          "the GID table follows " + na.netdev +
              "'s addresses: add the address again (ip addr del " + na.prefix.to_string() +
              " dev " + na.netdev + "; ip addr add " + na.prefix.to_string() + " dev " + na.netdev +
              ") and check rdma link show " + d.device + " names " + na.netdev,
          rail);
    }
  }

  // The path MTU does not bound rcnet's packets (one RC SEND carries up to
  // tun.mtu or a 64 KiB GSO frame), but below 1024 bytes every SEND is
  // many small packets on the wire.
  void check_mtu(std::size_t k, const NetdevAddress& na, const RdmaBinding& d) {
    const int rail = static_cast<int>(k);
    const std::string rn = rail_name(k);
    const std::string netdev_mtu = read("sys/class/net/" + na.netdev + "/mtu").value_or("?");
    const std::uint32_t tun_mtu = cfg_.manager.mtu;
    const std::string found = rn + na.netdev + " mtu " + netdev_mtu + ", " + d.device +
                              " path MTU " + std::to_string(d.active_mtu) + " bytes; tun.mtu " +
                              std::to_string(tun_mtu);
    if (d.iwarp || d.active_mtu >= 1024) {
      add(kMtu, Status::kPass, found, {}, rail);
      return;
    }
    const std::uint32_t pkts = d.active_mtu == 0 ? 0 : (tun_mtu + d.active_mtu - 1) / d.active_mtu;
    add(kMtu, Status::kWarn,
        found + ": a tun.mtu packet is " + std::to_string(pkts) + " packets on the wire",
        "raise " + na.netdev + "'s MTU on every node (ip link set " + na.netdev +
            " mtu 1500, or 9000 where the fabric takes it; a 4096-byte path MTU needs 4200)",
        rail);
  }

  void check_listen_port(std::size_t k, const Endpoint& ep, const RdmaBinding& d) {
    const int rail = static_cast<int>(k);
    const std::string rn = rail_name(k);
    const std::string port = std::to_string(ep.port);
    auto b = host_.rdma_bind(ep);
    const std::string key = "node.port" + where("node.port");
    if (b) {
      add(kListenPort, Status::kPass,
          rn + "rdma_cm port " + port + " on " + ep.addr.to_string() + " is free", {}, rail);
    } else if (b.error().code.value() == EADDRINUSE) {
      add(kListenPort, Status::kFail,
          rn + "rdma_cm port " + port + " on " + ep.addr.to_string() + " is taken (EADDRINUSE)",
          "another rdma_cm listener holds it: rcnetd itself (rcnetctl status; systemctl "
          "status rcnetd) or another program (rdma res show cm_id names it); stop it or "
          "change " +
              key,
          rail);
    } else {
      add(kListenPort, Status::kFail,
          rn + "rdma_cm cannot bind " + ep.to_string() + ": " + b.error().message(),
          b.error().code.value() == EACCES
              ? "ports below 1024 need CAP_NET_BIND_SERVICE: change " + key
              : "see rdma res show cm_id, and " + key,
          rail);
    }
    if (!d.iwarp || !host_.tcp_bind)
      return;
    auto t = host_.tcp_bind(ep);
    if (t) {
      add(kTcpPort, Status::kPass,
          rn + "TCP port " + port + " on " + ep.addr.to_string() +
              " is free (iWARP listens in the TCP port space)",
          {}, rail);
    } else {
      add(kTcpPort, Status::kFail,
          rn + "TCP port " + port + " on " + ep.addr.to_string() + " is taken (" +
              t.error().code.message() + "): an iWARP listener shares the TCP port space",
          "ss -ltnp 'sport = :" + port + "' names the program: stop it or change " + key, rail);
    }
  }

  // Effective value of an IPv4 conf sysctl on `netdev`: the larger of
  // conf/all and conf/NETDEV (rp_filter, arp_ignore, arp_announce), or
  // either set (accept_local), as the kernel reads them (IN_DEV_MAXCONF,
  // IN_DEV_ORCONF in include/linux/inetdevice.h).
  std::optional<int> conf(const std::string& netdev, const std::string& key, bool max) const {
    const auto a = read("proc/sys/net/ipv4/conf/all/" + key);
    const auto d = read("proc/sys/net/ipv4/conf/" + netdev + "/" + key);
    if (!a || !d)
      return std::nullopt;
    const int av = std::atoi(a->c_str()), dv = std::atoi(d->c_str());
    return max ? std::max(av, dv) : static_cast<int>(av != 0 || dv != 0);
  }

  void check_sysctls(std::size_t k, const NetdevAddress& na) {
    const int rail = static_cast<int>(k);
    const std::string rn = rail_name(k);
    const IpPrefix subnet = network_of(na.prefix);
    // Other netdevs with an address in this rail's subnet (same-subnet
    // multi-homing; in the lab, every node's netdev), and whether any of
    // those addresses is a peer of this rail (peers on this host).
    std::set<std::string> same, v4netdevs;
    bool local_peers = false;
    for (const NetdevAddress& o : addresses_) {
      if (!o.prefix.addr.is_v4() || o.netdev == "lo" || o.netdev == cfg_.tun_name)
        continue;
      v4netdevs.insert(o.netdev);
      if (o.netdev == na.netdev || !subnet.contains(o.prefix.addr))
        continue;
      same.insert(o.netdev);
      if (cfg_.overlay_for(o.prefix.addr, k))
        local_peers = true;
    }
    if (same.empty() && v4netdevs.size() <= 1) {
      add(kSysctl, Status::kPass,
          rn + na.netdev + " is this node's only IPv4 netdev: rp_filter and ARP need nothing", {},
          rail);
      return;
    }
    const std::string conf_dir = "net.ipv4.conf." + na.netdev + ".";
    const auto rp = conf(na.netdev, "rp_filter", true);
    const auto ai = conf(na.netdev, "arp_ignore", true);
    const auto aa = conf(na.netdev, "arp_announce", true);
    const auto al = conf(na.netdev, "accept_local", false);
    std::string others;
    for (const std::string& s : same)
      others += (others.empty() ? "" : ", ") + s;
    const std::string ctx =
        same.empty() ? " (multi-homed: " + std::to_string(v4netdevs.size()) + " netdevs with IPv4)"
                     : " (" + others + " also in " + subnet.to_string() + ")";
    bool bad = false;
    if (rp && *rp == 1) {
      bad = true;
      add(kSysctl, same.empty() ? Status::kWarn : Status::kFail,
          rn + "rp_filter is 1 (strict) on " + na.netdev + ctx +
              ": packets that arrive on one netdev and route back by another are dropped",
          "sysctl -w " + conf_dir +
              "rp_filter=2 (loose; the kernel takes the larger of "
              "conf.all and conf." +
              na.netdev + "), and the same in /etc/sysctl.d/",
          rail);
    }
    if (!same.empty() && ai && *ai == 0) {
      bad = true;
      add(kSysctl, Status::kWarn,
          rn + "arp_ignore is 0 on " + na.netdev + ctx +
              ": every netdev answers ARP for every address, peers may send RoCE to the "
              "wrong port",
          "sysctl -w " + conf_dir + "arp_ignore=1, and the same in /etc/sysctl.d/", rail);
    }
    if (!same.empty() && aa && *aa == 0) {
      bad = true;
      add(kSysctl, Status::kWarn,
          rn + "arp_announce is 0 on " + na.netdev + ctx +
              ": ARP requests may carry another netdev's address",
          "sysctl -w " + conf_dir + "arp_announce=2, and the same in /etc/sysctl.d/", rail);
    }
    if (local_peers && al && *al == 0) {
      bad = true;
      add(kSysctl, Status::kFail,
          rn + "accept_local is 0 on " + na.netdev + ctx +
              ", and peers' addresses are local to this host: their packets are dropped",
          "sysctl -w " + conf_dir + "accept_local=1", rail);
    }
    if (!bad) {
      add(kSysctl, Status::kPass,
          rn + "rp_filter " + (rp ? std::to_string(*rp) : "?") + ", arp_ignore " +
              (ai ? std::to_string(*ai) : "?") + ", arp_announce " +
              (aa ? std::to_string(*aa) : "?") + ", accept_local " +
              (al ? std::to_string(*al) : "?") + " on " + na.netdev + ctx,
          {}, rail);
    }
  }

  void check_iwpmd(std::size_t k) {
    const int rail = static_cast<int>(k);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(at_root("proc"), ec)) {
      const std::string pid = e.path().filename().string();
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (read("proc/" + pid + "/comm") == "iwpmd") {
        add(kIwpmd, Status::kPass, rail_name(k) + "iwpmd runs (pid " + pid + ")", {}, rail);
        return;
      }
    }
    add(kIwpmd, Status::kWarn,
        rail_name(k) +
            "iwpmd does not run: iWARP ports are then not mapped to the host's TCP "
            "ports",
        "systemctl enable --now iwpmd (rdma-core), or start iwpmd", rail);
  }

  static std::string bytes_text(std::uint64_t b) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / 1048576.0);
    return buf;
  }

  void check_memlock() {
    // What the rails register: their send slots each, the receive buffers
    // once per device (rails on one device share its SRQ), per rail when
    // the device is unknown.
    std::uint64_t need = 0;
    std::set<std::string> devices;
    for (std::size_t k = 0; k < cfg_.rail_count(); ++k) {
      const cm::RegisteredBytes r = cm::registered_bytes(cfg_.manager_for_rail(k));
      need += r.send_slots;
      const auto& b = k < rails_.size() ? rails_[k].binding : std::nullopt;
      if (!cfg_.manager.use_srq || !b || devices.insert(b->device).second)
        need += r.receive;
    }
    const std::string unit = unit_for(path_);
    auto m =
        host_.memlock ? host_.memlock(unit) : Result<Memlock>(Error::from_errno(ENOSYS, "memlock"));
    const std::string want = "rcnetd registers " + bytes_text(need) + " (srq.size, " +
                             "limits.send_slots, tun.mtu, transport.offload)";
    if (!m) {
      add(kMemlock, Status::kWarn, want + "; RLIMIT_MEMLOCK unknown: " + m.error().message(),
          "systemctl show -p LimitMEMLOCK " + unit + " should say infinity");
      return;
    }
    const std::string limit =
        m->bytes ? bytes_text(*m->bytes) + " (" + std::to_string(*m->bytes) + " bytes)"
                 : std::string("unlimited");
    const std::string found = want + "; RLIMIT_MEMLOCK is " + limit + ", from " + m->source;
    const std::string advice = "LimitMEMLOCK=infinity in " + unit +
                               " (the shipped unit sets it; systemctl edit " + unit +
                               "), or ulimit -l unlimited in the shell that starts rcnetd";
    if (!m->bytes || *m->bytes >= need + need / 4)
      add(kMemlock, Status::kPass, found);
    else if (*m->bytes >= need)
      add(kMemlock, Status::kWarn,
          found +
              ": less than 25% left for the QPs' and CQs' own queues, which hardware "
              "providers pin too",
          advice);
    else
      add(kMemlock, Status::kFail, found + ": registering the buffers fails (ENOMEM)", advice);
  }

  // The unit runs as user rcnet: every node it opens must be readable and
  // writable by others (udev's defaults: 0666).
  void check_dev_node(const std::string& path, const std::string& missing_advice) {
    struct stat st {};
    if (::stat(at_root(path.substr(1)).c_str(), &st) != 0) {
      add(kDevNode, Status::kFail, path + " does not exist", missing_advice);
      return;
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    if ((st.st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH)) {
      add(kDevNode, Status::kPass, path + " is " + mode);
      return;
    }
    add(kDevNode, Status::kFail,
        path + " is " + mode + ": rcnetd's unit (User=rcnet) cannot open it",
        "chmod 0666 " + path +
            " (udev's default; look for a rule in /etc/udev/rules.d/ that changed it)");
  }

  void check_dev_nodes() {
    check_dev_node("/dev/infiniband/rdma_cm", "modprobe rdma_ucm");
    std::set<std::string> done;
    for (const RailFacts& f : rails_) {
      if (!f.binding || !done.insert(f.binding->device).second)
        continue;
      // uverbsN of the device: /sys/class/infiniband_verbs/uverbsN/ibdev names it.
      std::optional<std::string> node;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(at_root("sys/class/infiniband_verbs"), ec)) {
        const std::string n = e.path().filename().string();
        if (read("sys/class/infiniband_verbs/" + n + "/ibdev") == f.binding->device)
          node = n;
      }
      if (!node) {
        add(kDevNode, Status::kFail, f.binding->device + " has no uverbs device",
            "modprobe ib_uverbs");
        continue;
      }
      check_dev_node("/dev/infiniband/" + *node, "modprobe ib_uverbs; udevadm trigger");
    }
    check_dev_node("/dev/net/tun", "modprobe tun");
  }

  void check_routes() {
    const IpPrefix& overlay = cfg_.tun_address;
    const IpPrefix net = network_of(overlay);
    const std::string ns = cfg_.tun_netns.empty() ? "" : " in netns " + cfg_.tun_netns;
    auto r = host_.routes ? host_.routes(cfg_.tun_netns)
                          : Result<std::vector<Route>>(Error::from_errno(ENOSYS, "routes"));
    if (!r) {
      add(kRoute, Status::kWarn, "cannot read the routes" + ns + ": " + r.error().message(),
          cfg_.tun_netns.empty() ? "ip route show table all | grep " + net.to_string()
                                 : "run rcnetctl doctor as root (it enters " + cfg_.tun_netns +
                                       "), or ip -n " + cfg_.tun_netns + " route show table all",
          -1);
      return;
    }
    bool any = false;
    for (const Route& rt : *r) {
      if (rt.dst.addr.family != net.addr.family || rt.netdev == cfg_.tun_name)
        continue;
      // A route inside the overlay (as long as its prefix or longer) wins
      // over rc0's or ties with it; a shorter one (a default route, a
      // supernet) loses to rc0's and is no collision.
      if (rt.dst.length < net.length || !net.contains(rt.dst.addr))
        continue;
      if (rt.type == "broadcast" || rt.type == "multicast")
        continue;
      any = true;
      const std::string via = rt.netdev.empty() ? "" : " dev " + rt.netdev;
      add(kRoute, Status::kFail,
          rt.type + " route " + rt.dst.to_string() + via + " (table " + rt.table + ")" + ns +
              " collides with tun.address " + overlay.to_string() + where("tun.address") +
              ": packets for the overlay would not enter " + cfg_.tun_name,
          std::string(cfg_.tun_netns.empty() ? "ip" : "ip -n " + cfg_.tun_netns) + " route del " +
              (rt.type == "unicast" ? "" : rt.type + " ") + rt.dst.to_string() + via + " table " +
              rt.table +
              " (or an address on another netdev: ip addr del), or choose another "
              "tun.address");
    }
    if (!any)
      add(kRoute, Status::kPass,
          "no route" + ns + " inside " + net.to_string() + " other than " + cfg_.tun_name + "'s");
  }

  const config::Config& cfg_;
  const std::string& path_;
  const Host& host_;
  std::vector<Finding> out_;
  std::vector<NetdevAddress> addresses_;
  std::string addresses_error_;
  std::vector<RailFacts> rails_;
};

}  // namespace

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
