// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's checks of a rail's RDMA stack (doctor_checks.hpp): its
// address on a netdev, the RDMA device and port that serve it, the RoCE GID,
// the path MTU and the listen port.
#include "doctor_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

namespace rcnet::rcnetctl::doctor {

namespace fs = std::filesystem;

void Doctor::load_addresses() {
  if (!host_.addresses)
    return;
  auto a = host_.addresses();
  if (a)
    addresses_ = std::move(*a);
  else
    addresses_error_ = a.error().message();
}

const NetdevAddress* Doctor::find_address(const IpAddr& a) const {
  for (const NetdevAddress& n : addresses_) {
    if (n.prefix.addr == a)
      return &n;
  }
  return nullptr;
}

void Doctor::check_rail(std::size_t k) {
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
               "'s NIC (e.g. modprobe mlx5_ib), or for Soft-RoCE: rdma link add rxe_" + na->netdev +
               " type rxe netdev " + na->netdev;
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
    add(kPort, Status::kPass, rn + d.device + " port " + std::to_string(d.port) + " is ACTIVE", {},
        rail);
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
std::string Doctor::driver_of(const RdmaBinding& d) const {
  std::error_code ec;
  const fs::path link =
      fs::read_symlink(at_root("sys/class/infiniband/" + d.device + "/device/driver/module"), ec);
  if (!ec && !link.filename().empty())
    return link.filename().string();
  return d.iwarp ? "siw" : "rdma_rxe";
}

// The GID a RoCE v2 REQ carries: the IPv4-mapped or IPv6 address, as
// sysfs prints it ("0000:0000:0000:0000:0000:ffff:0a63:0001").
std::string Doctor::gid_text(const IpAddr& a) {
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

void Doctor::check_gid(std::size_t k, const NetdevAddress& na, const RdmaBinding& d) {
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
  const std::string port = "sys/class/infiniband/" + d.device + "/ports/" + std::to_string(d.port);
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
        "the GID table follows " + na.netdev + "'s addresses: add the address again (ip addr del " +
            na.prefix.to_string() + " dev " + na.netdev + "; ip addr add " + na.prefix.to_string() +
            " dev " + na.netdev + ") and check rdma link show " + d.device + " names " + na.netdev,
        rail);
  }
}

// The path MTU does not bound rcnet's packets (one RC SEND carries up to
// tun.mtu or a 64 KiB GSO frame), but below 1024 bytes every SEND is
// many small packets on the wire.
void Doctor::check_mtu(std::size_t k, const NetdevAddress& na, const RdmaBinding& d) {
  const int rail = static_cast<int>(k);
  const std::string rn = rail_name(k);
  const std::string netdev_mtu = read("sys/class/net/" + na.netdev + "/mtu").value_or("?");
  const std::uint32_t tun_mtu = cfg_.manager.mtu;
  const std::string found = rn + na.netdev + " mtu " + netdev_mtu + ", " + d.device + " path MTU " +
                            std::to_string(d.active_mtu) + " bytes; tun.mtu " +
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

void Doctor::check_listen_port(std::size_t k, const Endpoint& ep, const RdmaBinding& d) {
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

}  // namespace rcnet::rcnetctl::doctor
