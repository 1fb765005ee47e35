// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's checks of the kernel's IP side (doctor_checks.hpp): the
// IPv4 sysctls a rail's netdev needs and the routes that would take the
// overlay's packets from the TUN.
#include "doctor_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

namespace rcnet::rcnetctl::doctor {

namespace {

// `p` with its host bits zero: the subnet as ip(8) prints it.
IpPrefix network_of(const IpPrefix& p) {
  IpPrefix n = p;
  for (std::size_t i = p.length; i < n.addr.size() * 8; ++i)
    n.addr.bytes[i / 8] = static_cast<std::uint8_t>(n.addr.bytes[i / 8] & ~(0x80u >> (i % 8)));
  return n;
}

}  // namespace

// Effective value of an IPv4 conf sysctl on `netdev`: the larger of
// conf/all and conf/NETDEV (rp_filter, arp_ignore, arp_announce), or
// either set (accept_local), as the kernel reads them (IN_DEV_MAXCONF,
// IN_DEV_ORCONF in include/linux/inetdevice.h).
std::optional<int> Doctor::conf(const std::string& netdev, const std::string& key, bool max) const {
  const auto a = read("proc/sys/net/ipv4/conf/all/" + key);
  const auto d = read("proc/sys/net/ipv4/conf/" + netdev + "/" + key);
  if (!a || !d)
    return std::nullopt;
  const int av = std::atoi(a->c_str()), dv = std::atoi(d->c_str());
  return max ? std::max(av, dv) : static_cast<int>(av != 0 || dv != 0);
}

void Doctor::check_sysctls(std::size_t k, const NetdevAddress& na) {
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

void Doctor::check_routes() {
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

}  // namespace rcnet::rcnetctl::doctor
