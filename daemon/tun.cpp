// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tun.hpp"

#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/ip.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>
#include <netlink/route/link/inet.h>
#include <netlink/route/link/inet6.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "netns.hpp"
#include "nl.hpp"
#include "wire/vnet_hdr.hpp"

namespace rcnet::daemon {

namespace {

// linux/if_tun.h of Linux >= 6.2; older headers lack them.
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

// TUNSETVNETHDRSZ, TUNSETVNETLE, TUNSETOFFLOAD on a device opened with
// IFF_VNET_HDR; returns the offloads enabled, for the log.
Result<std::string> enable_offloads(int fd, const std::string& name) {
  int hdr_len = static_cast<int>(wire::kVnetHdrLen);
  if (::ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0)
    return Error::from_errno(errno, "TUNSETVNETHDRSZ " + name);
  // The header's 16-bit fields little-endian on every host: the same bytes
  // then travel to the peer (the default already on little-endian hosts).
  int le = 1;
  if (::ioctl(fd, TUNSETVNETLE, &le) < 0)
    return Error::from_errno(errno, "TUNSETVNETLE " + name);
  const unsigned base = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
  if (::ioctl(fd, TUNSETOFFLOAD, static_cast<unsigned long>(base | TUN_F_USO4 | TUN_F_USO6)) == 0)
    return std::string("csum tso4 tso6 tso_ecn uso4 uso6");
  if (errno != EINVAL)
    return Error::from_errno(errno, "TUNSETOFFLOAD " + name);
  if (::ioctl(fd, TUNSETOFFLOAD, static_cast<unsigned long>(base)) < 0)
    return Error::from_errno(errno, "TUNSETOFFLOAD " + name);
  return std::string("csum tso4 tso6 tso_ecn (no uso: kernel before 6.2)");
}

}  // namespace

Result<TunDevice> TunDevice::open(const std::string& name, bool offload, const std::string& netns) {
  if (name.empty() || name.size() >= IFNAMSIZ)
    return Error::invalid("TUN name '" + name + "'");
  const std::string where = netns.empty() ? name : name + " in netns " + netns;
  UniqueFd fd;
  ifreq ifr{};
  {
    auto in_ns = NetnsSwitch::enter(netns);
    if (!in_ns)
      return in_ns.error();
    fd = UniqueFd(::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!fd)
      return Error::from_errno(errno, "open /dev/net/tun");
    ifr.ifr_flags = static_cast<short>(IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0));
    std::memcpy(ifr.ifr_name, name.data(), name.size());
    if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0)
      return Error::from_errno(errno, "TUNSETIFF " + where);
  }  // back home: the device stays in the namespace its fd was opened in
  // The kernel fills in the final name when `name` was a template.
  return finish(std::move(fd), std::string(ifr.ifr_name, ::strnlen(ifr.ifr_name, IFNAMSIZ)),
                offload, netns);
}

Result<TunDevice> TunDevice::adopt(UniqueFd fd, const std::string& name, bool offload,
                                   const std::string& netns) {
  ifreq ifr{};
  if (::ioctl(fd.get(), TUNGETIFF, &ifr) < 0)
    return Error::from_errno(errno, "TUNGETIFF on the stored fd");
  const std::string got(ifr.ifr_name, ::strnlen(ifr.ifr_name, IFNAMSIZ));
  const unsigned flags = static_cast<unsigned short>(ifr.ifr_flags);
  if ((flags & (IFF_TUN | IFF_TAP | IFF_NO_PI)) != (IFF_TUN | IFF_NO_PI))
    return Error::invalid("the stored fd's device " + got + " is not a TUN without packet info");
  if (name.find('%') == std::string::npos && got != name)
    return Error::invalid("the stored TUN is " + got + ", tun.name is " + name);
  if (((flags & IFF_VNET_HDR) != 0) != offload)
    return Error::invalid("the stored TUN " + got +
                          " was made with transport.offload = " + (offload ? "false" : "true"));
  const int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) < 0)
    return Error::from_errno(errno, "O_NONBLOCK on the stored TUN " + got);
  auto dev = finish(std::move(fd), got, offload, netns);
  if (dev)
    dev->adopted_ = true;
  return dev;
}

Result<TunDevice> TunDevice::finish(UniqueFd fd, std::string name, bool offload,
                                    const std::string& netns) {
  TunDevice dev(std::move(fd), std::move(name));
  dev.netns_ = netns;
  if (offload) {
    auto what = enable_offloads(dev.fd(), dev.name());
    if (!what)
      return what.error();
    dev.vnet_hdr_len_ = wire::kVnetHdrLen;
    dev.uso_ = what->find("uso4") != std::string::npos;
    dev.offloads_ = std::move(*what);
  }
  return dev;
}

Result<void> TunDevice::configure(std::span<const IpPrefix> addresses, std::uint32_t mtu,
                                  std::uint32_t gso_max_segs) {
  Result<NlSockPtr> sock = Error::invalid("unset");
  {
    auto in_ns = NetnsSwitch::enter(netns_);
    if (!in_ns)
      return in_ns.error();
    sock = open_request_socket(NETLINK_ROUTE);
  }  // back home: the socket stays bound to the device's namespace
  if (!sock)
    return sock.error();
  const std::string where = netns_.empty() ? name_ : name_ + " (netns " + netns_ + ")";

  rtnl_link* raw = nullptr;
  if (int r = rtnl_link_get_kernel(sock->get(), 0, name_.c_str(), &raw); r < 0) {
    return nl_error(r, "look up link " + where);
  }
  RtnlLinkPtr link(raw);
  const int ifindex = rtnl_link_get_ifindex(link.get());

  // No IPv6 link-local address, so nothing the kernel sends by itself
  // needs one: without it no router solicitation goes out
  // (addrconf_dad_completed sends RS only from a link-local address), and
  // a TUN (IFF_NOARP) does no DAD and joins no solicited-node group
  // (addrconf_dad_begin, addrconf_join_solict). The address is made when
  // the device comes up, so this goes first, in a change of its own, before
  // the one that sets IFF_UP. What still goes out
  // (MLD reports for ff02::2 when forwarding, IGMP) TunPath counts as
  // link_scope_multicast. Not fatal: a kernel without IPv6, or a TUN whose
  // MTU is below 1280 (no inet6 device), answers EAFNOSUPPORT, and
  // /proc/sys (router_solicitations, accept_dad) is read-only under
  // ProtectKernelTunables=.
  if (RtnlLinkPtr gen(rtnl_link_alloc()); gen) {
    int r = rtnl_link_inet6_set_addr_gen_mode(gen.get(), IN6_ADDR_GEN_MODE_NONE);
    if (r >= 0)
      r = rtnl_link_change(sock->get(), link.get(), gen.get(), 0);
    if (r < 0)
      spdlog::info(
          "{}: cannot set addr_gen_mode none ({}): the kernel may send router solicitations "
          "on it (counted as link_scope_multicast)",
          where, nl_geterror(-r));
  }

  RtnlLinkPtr change(rtnl_link_alloc());
  if (!change)
    return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_mtu(change.get(), mtu);
  rtnl_link_set_flags(change.get(), IFF_UP);
  // The ICMP errors the data path writes into the TUN come from our own
  // overlay address (tun_path.hpp); without accept_local the kernel drops
  // an IPv4 packet arriving with a local source as a martian
  // (fib_validate_source). Set over rtnetlink (IFLA_INET_CONF), not
  // /proc/sys, which the service's ProtectKernelTunables= hides.
  if (int r = rtnl_link_inet_set_conf(change.get(), IPV4_DEVCONF_ACCEPT_LOCAL, 1); r < 0)
    return nl_error(r, "rtnl_link_inet_set_conf accept_local");
  if (int r = rtnl_link_change(sock->get(), link.get(), change.get(), 0); r < 0) {
    return nl_error(r, "set mtu " + std::to_string(mtu) + ", up and accept_local on " + where);
  }
  if (gso_max_segs != 0) {
    // libnl has no setter for it: one RTM_SETLINK by hand.
    NlMsgPtr msg(nlmsg_alloc_simple(RTM_SETLINK, 0));
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = ifindex;
    int r = msg ? nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) : -NLE_NOMEM;
    if (r >= 0)
      r = nla_put_u32(msg.get(), IFLA_GSO_MAX_SEGS, gso_max_segs);
    if (r >= 0)
      r = nl_send_sync(sock->get(), msg.release());  // frees the message
    if (r < 0)
      spdlog::warn(
          "cannot set gso_max_segs {} on {}: {}: a GSO packet of more segments for a "
          "peer without offload is dropped (drops_gso_to_legacy_peer)",
          gso_max_segs, where, nl_geterror(-r));
  }

  if (adopted_) {
    if (auto r = prune_addresses(sock->get(), ifindex, addresses, where); !r)
      return r;
  }
  for (const IpPrefix& address : addresses) {
    RtnlAddrPtr addr(rtnl_addr_alloc());
    NlAddrPtr local = to_nl_addr(address.addr, address.length);
    if (!addr || !local)
      return Error::from_errno(ENOMEM, "rtnl_addr_alloc");
    rtnl_addr_set_ifindex(addr.get(), ifindex);
    rtnl_addr_set_family(addr.get(), address.addr.family);
    if (int r = rtnl_addr_set_local(addr.get(), local.get()); r < 0) {
      return nl_error(r, "rtnl_addr_set_local");
    }
    rtnl_addr_set_prefixlen(addr.get(), address.length);
    // No DAD: the overlay's addresses are assigned by the config, and DAD's
    // neighbour solicitation would go to no peer.
    if (address.addr.is_v6())
      rtnl_addr_set_flags(addr.get(), IFA_F_NODAD);
    if (int r = rtnl_addr_add(sock->get(), addr.get(), 0); r < 0 && r != -NLE_EXIST) {
      return nl_error(r, "add address " + address.to_string() + " to " + where);
    }
  }
  return {};
}

Result<void> TunDevice::prune_addresses(nl_sock* sock, int ifindex,
                                        std::span<const IpPrefix> addresses,
                                        const std::string& where) {
  nl_cache* raw = nullptr;
  if (int r = rtnl_addr_alloc_cache(sock, &raw); r < 0)
    return nl_error(r, "list the addresses of " + where);
  NlCachePtr cache(raw);
  std::vector<std::pair<RtnlAddrPtr, IpPrefix>> gone;
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    const auto local = to_ip(rtnl_addr_get_local(a));  // nullopt: not IPv4 or IPv6
    if (rtnl_addr_get_ifindex(a) != ifindex || !local || rtnl_addr_get_scope(a) == RT_SCOPE_LINK)
      continue;  // a link-local address is the kernel's, not tun.address's
    const IpPrefix have{*local, static_cast<std::uint8_t>(rtnl_addr_get_prefixlen(a))};
    if (std::find(addresses.begin(), addresses.end(), have) == addresses.end()) {
      nl_object_get(o);
      gone.emplace_back(RtnlAddrPtr(a), have);
    }
  }
  for (const auto& [a, have] : gone) {
    if (int r = rtnl_addr_delete(sock, a.get(), 0); r < 0 && r != -NLE_NOADDR)
      return nl_error(r, "remove address " + have.to_string() + " from " + where);
    spdlog::info("{}: address {} removed: not in tun.address any more", where, have.to_string());
  }
  return {};
}

Result<std::size_t> TunDevice::read(std::span<std::byte> buf) {
  const ssize_t n = ::read(fd_.get(), buf.data(), buf.size());
  if (n < 0)
    return Error::from_errno(errno, "read " + name_);
  return static_cast<std::size_t>(n);
}

Result<void> TunDevice::write(std::span<const std::byte> packet) {
  const ssize_t n = ::write(fd_.get(), packet.data(), packet.size());
  if (n < 0)
    return Error::from_errno(errno, "write " + name_);
  return {};
}

}  // namespace rcnet::daemon
