// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's real host (doctor.hpp Host): getifaddrs(3), librdmacm,
// a TCP socket, libnl-route-3's route cache, sd-bus or getrlimit(2).
#include <fcntl.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/rtnl.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "doctor.hpp"

namespace rcnet::rcnetctl::doctor {

namespace {

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

Result<std::vector<NetdevAddress>> system_addresses() {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0)
    return Error::from_errno(errno, "getifaddrs");
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, &::freeifaddrs);
  std::vector<NetdevAddress> out;
  for (const ifaddrs* i = raw; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr)
      continue;
    const auto a = IpAddr::from_sockaddr(i->ifa_addr);
    if (!a)
      continue;
    std::uint8_t len = 0;
    if (i->ifa_netmask != nullptr) {
      if (const auto m = IpAddr::from_sockaddr(i->ifa_netmask)) {
        for (std::size_t b = 0; b < m->size() * 8 && (m->bytes[b / 8] >> (7 - b % 8) & 1u); ++b)
          ++len;
      }
    }
    out.push_back({i->ifa_name, IpPrefix{*a, len}});
  }
  return out;
}

struct CmIdDestroy {
  void operator()(rdma_cm_id* id) const noexcept { (void)rdma_destroy_id(id); }
};

// rdma_create_id(3) and rdma_bind_addr(3): -1 and errno.
Result<RdmaBinding> system_rdma_bind(const Endpoint& ep) {
  rdma_cm_id* raw = nullptr;
  // No event channel: a synchronous id, which nothing here waits on.
  if (rdma_create_id(nullptr, &raw, nullptr, RDMA_PS_TCP) != 0)
    return Error::from_errno(errno, "rdma_create_id");
  std::unique_ptr<rdma_cm_id, CmIdDestroy> id(raw);
  sockaddr_storage ss{};
  ep.to_sockaddr(ss);
  if (rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&ss)) != 0)
    return Error::from_errno(errno, "rdma_bind_addr " + ep.to_string());
  if (id->verbs == nullptr)
    return Error::from_errno(ENODEV, "rdma_bind_addr " + ep.to_string() + ": no device");
  RdmaBinding b;
  b.device = ibv_get_device_name(id->verbs->device);
  b.port = id->port_num;
  b.iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
  ibv_port_attr pa{};
  if (int e = ibv_query_port(id->verbs, id->port_num, &pa); e != 0)
    return Error::from_errno(e, "ibv_query_port " + b.device);
  b.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  b.active = pa.state == IBV_PORT_ACTIVE;
  b.state = ibv_port_state_str(pa.state);
  b.active_mtu = mtu_bytes(pa.active_mtu);
  return b;
}

Result<void> system_tcp_bind(const Endpoint& ep) {
  sockaddr_storage ss{};
  const socklen_t len = ep.to_sockaddr(ss);
  FdCloser s{::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return Error::from_errno(errno, "socket");
  const int one = 1;
  (void)::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0)
    return Error::from_errno(errno, "bind TCP " + ep.to_string());
  return {};
}

struct NlSockFree {
  void operator()(nl_sock* s) const noexcept { nl_socket_free(s); }
};
struct NlCacheFree {
  void operator()(nl_cache* c) const noexcept { nl_cache_free(c); }
};

std::string table_name(std::uint32_t t) {
  switch (t) {
    case RT_TABLE_MAIN:
      return "main";
    case RT_TABLE_LOCAL:
      return "local";
    case RT_TABLE_DEFAULT:
      return "default";
  }
  return std::to_string(t);
}

// A netlink socket of `netns`: made inside it (setns(2) there and back; a
// socket keeps the namespace it was made in).
Result<std::unique_ptr<nl_sock, NlSockFree>> route_socket(const std::string& netns) {
  std::unique_ptr<nl_sock, NlSockFree> sk(nl_socket_alloc());
  if (!sk)
    return Error::from_errno(ENOMEM, "nl_socket_alloc");
  if (netns.empty()) {
    if (int r = nl_connect(sk.get(), NETLINK_ROUTE); r < 0)
      return Error::from_errno(-r, std::string("nl_connect: ") + nl_geterror(r));
    return sk;
  }
  FdCloser self{::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)};
  if (self.fd < 0)
    return Error::from_errno(errno, "open /proc/self/ns/net");
  const std::string path = "/run/netns/" + netns;
  FdCloser target{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (target.fd < 0)
    return Error::from_errno(errno, "open " + path);
  if (::setns(target.fd, CLONE_NEWNET) != 0)
    return Error::from_errno(errno, "setns " + path);
  const int r = nl_connect(sk.get(), NETLINK_ROUTE);
  if (::setns(self.fd, CLONE_NEWNET) != 0)
    return Error::from_errno(errno, "setns back from " + path);
  if (r < 0)
    return Error::from_errno(-r, std::string("nl_connect: ") + nl_geterror(r));
  return sk;
}

Result<std::vector<Route>> system_routes(const std::string& netns) {
  auto sk = route_socket(netns);
  if (!sk)
    return sk.error();
  std::vector<Route> out;
  for (const int family : {AF_INET, AF_INET6}) {
    nl_cache* raw = nullptr;
    // Every table (not only main): NL_AUTO_PROVIDE off, flags 0.
    if (int r = rtnl_route_alloc_cache(sk->get(), family, 0, &raw); r < 0)
      return Error::from_errno(-r, std::string("rtnl_route_alloc_cache: ") + nl_geterror(r));
    std::unique_ptr<nl_cache, NlCacheFree> cache(raw);
    nl_cache* links_raw = nullptr;
    (void)rtnl_link_alloc_cache(sk->get(), AF_UNSPEC, &links_raw);
    std::unique_ptr<nl_cache, NlCacheFree> links(links_raw);
    for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
      auto* rt = reinterpret_cast<rtnl_route*>(o);
      nl_addr* dst = rtnl_route_get_dst(rt);
      if (dst == nullptr)
        continue;
      Route r;
      r.dst.addr.family = static_cast<std::uint8_t>(nl_addr_get_family(dst));
      const unsigned len = nl_addr_get_len(dst);
      if (len > r.dst.addr.bytes.size())
        continue;
      std::copy_n(static_cast<const std::uint8_t*>(nl_addr_get_binary_addr(dst)), len,
                  r.dst.addr.bytes.begin());
      r.dst.length = static_cast<std::uint8_t>(nl_addr_get_prefixlen(dst));
      r.table = table_name(rtnl_route_get_table(rt));
      char type[32];
      r.type = nl_rtntype2str(rtnl_route_get_type(rt), type, sizeof type);
      if (rtnl_route_get_nnexthops(rt) > 0) {
        const int ifindex = rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(rt, 0));
        char name[64] = "";
        if (links && ifindex > 0 && rtnl_link_i2name(links.get(), ifindex, name, sizeof name))
          r.netdev = name;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

// sd-bus's calls return a negative errno.
Result<Memlock> system_memlock(const std::string& unit) {
  if (sd_booted() > 0) {
    sd_bus* raw = nullptr;
    if (int r = sd_bus_open_system(&raw); r < 0)
      return Error::from_errno(-r, "sd_bus_open_system");
    std::unique_ptr<sd_bus, decltype(&sd_bus_flush_close_unref)> bus(raw,
                                                                     &sd_bus_flush_close_unref);
    char* path_raw = nullptr;
    if (int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit.c_str(), &path_raw);
        r < 0)
      return Error::from_errno(-r, "sd_bus_path_encode " + unit);
    std::unique_ptr<char, decltype(&::free)> path(path_raw, &::free);
    sd_bus_error e = SD_BUS_ERROR_NULL;
    std::uint64_t v = 0;
    const int r = sd_bus_get_property_trivial(bus.get(), "org.freedesktop.systemd1", path.get(),
                                              "org.freedesktop.systemd1.Service", "LimitMEMLOCK",
                                              &e, 't', &v);
    const std::string msg = e.message != nullptr ? e.message : "";
    sd_bus_error_free(&e);
    if (r < 0)
      return Error::from_errno(-r, "LimitMEMLOCK of " + unit + (msg.empty() ? "" : ": " + msg));
    char* state_raw = nullptr;
    std::string load = "?";
    if (sd_bus_get_property_string(bus.get(), "org.freedesktop.systemd1", path.get(),
                                   "org.freedesktop.systemd1.Unit", "LoadState", nullptr,
                                   &state_raw) >= 0 &&
        state_raw != nullptr) {
      load = state_raw;
      ::free(state_raw);
    }
    Memlock m;
    if (v != RLIM_INFINITY)
      m.bytes = v;
    m.source = "LimitMEMLOCK of " + unit + " (systemd" +
               (load == "loaded" ? std::string(")") : ", unit " + load + ": its default)");
    return m;
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
    return Error::from_errno(errno, "getrlimit RLIMIT_MEMLOCK");
  Memlock m;
  if (rl.rlim_cur != RLIM_INFINITY)
    m.bytes = rl.rlim_cur;
  m.source = "this shell's ulimit -l (systemd is not running: rcnetd started from here gets it)";
  return m;
}

// The unit's LoadCredential= entries (a(ss): id, path) over sd-bus, the
// path of the one named `id`. A relative path is a name in the credential
// stores, searched in systemd's order.
Result<std::optional<std::string>> system_credential_source(const std::string& unit,
                                                            const std::string& id) {
  if (sd_booted() <= 0)
    return Error::from_errno(ENOSYS, "LoadCredential of " + unit + ": systemd is not running");
  sd_bus* raw = nullptr;
  if (int r = sd_bus_open_system(&raw); r < 0)
    return Error::from_errno(-r, "sd_bus_open_system");
  std::unique_ptr<sd_bus, decltype(&sd_bus_flush_close_unref)> bus(raw, &sd_bus_flush_close_unref);
  char* path_raw = nullptr;
  if (int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit.c_str(), &path_raw); r < 0)
    return Error::from_errno(-r, "sd_bus_path_encode " + unit);
  std::unique_ptr<char, decltype(&::free)> path(path_raw, &::free);
  sd_bus_error e = SD_BUS_ERROR_NULL;
  sd_bus_message* reply_raw = nullptr;
  const int r = sd_bus_get_property(bus.get(), "org.freedesktop.systemd1", path.get(),
                                    "org.freedesktop.systemd1.Service", "LoadCredential", &e,
                                    &reply_raw, "a(ss)");
  const std::string msg = e.message != nullptr ? e.message : "";
  sd_bus_error_free(&e);
  if (r < 0)
    return Error::from_errno(-r, "LoadCredential of " + unit + (msg.empty() ? "" : ": " + msg));
  std::unique_ptr<sd_bus_message, decltype(&sd_bus_message_unref)> reply(reply_raw,
                                                                         &sd_bus_message_unref);
  if (int q = sd_bus_message_enter_container(reply.get(), 'a', "(ss)"); q < 0)
    return Error::from_errno(-q, "LoadCredential of " + unit);
  std::optional<std::string> found;
  for (;;) {
    const char* cid = nullptr;
    const char* cpath = nullptr;
    const int q = sd_bus_message_read(reply.get(), "(ss)", &cid, &cpath);
    if (q < 0)
      return Error::from_errno(-q, "LoadCredential of " + unit);
    if (q == 0)
      break;
    if (cid != nullptr && id == cid)
      found = cpath != nullptr && *cpath != '\0' ? std::string(cpath) : id;
  }
  if (found && found->front() != '/') {
    for (const char* store : {"/etc/credstore/", "/run/credstore/", "/usr/lib/credstore/"}) {
      if (::access((store + *found).c_str(), F_OK) == 0)
        return std::optional<std::string>(store + *found);
    }
    return std::optional<std::string>("/etc/credstore/" + *found);
  }
  return found;
}

}  // namespace

Host system_host() {
  Host h;
  h.root = "/";
  h.addresses = system_addresses;
  h.rdma_bind = system_rdma_bind;
  h.tcp_bind = system_tcp_bind;
  h.routes = system_routes;
  h.memlock = system_memlock;
  h.credential_source = system_credential_source;
  return h;
}

}  // namespace rcnet::rcnetctl::doctor
