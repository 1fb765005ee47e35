// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor (tools/rcnetctl/doctor.hpp) on a faked host: a temporary
// directory as /sys, /proc and /dev, and fake rdma_cm, socket, netlink and
// rlimit answers. Each check's PASS on a good node, then its WARN or FAIL
// with the advice an operator acts on.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include "catch2_compat.hpp"

#include "cli.hpp"
#include "cm/manager.hpp"
#include "ctl/protocol.hpp"
#include "doctor.hpp"

namespace rcnetctl_doctor_test {
using namespace rcnet;
using namespace rcnet::rcnetctl;
namespace fs = std::filesystem;

namespace {

// A good one-rail Soft-RoCE node: 10.99.0.1/24 on v_1, served by rxe_1
// port 1, every module loaded, the lab's sysctls, 0666 device nodes.
struct FakeNode {
  std::string root;
  std::vector<doctor::NetdevAddress> addrs;
  doctor::RdmaBinding binding;
  int bind_errno = 0;    // rdma_bind of any port: this errno
  int listen_errno = 0;  // rdma_bind of the listen port only
  int tcp_errno = 0;     // tcp_bind
  std::vector<doctor::Route> routes;
  std::string routes_netns = "unset";
  std::optional<std::uint64_t> memlock;  // nullopt: unlimited
  std::string unit;
  std::map<std::string, std::string> credentials;  // the unit's LoadCredential=: id -> source
  std::string unit_user = "rcnet";

  FakeNode() {
    char tmpl[] = "/tmp/rcnet-doctor-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root = std::string(tmpl) + "/";
    write("proc/modules",
          "rdma_ucm 32768 0 - Live 0x0\nib_uverbs 163840 1 rdma_ucm, Live 0x0\n"
          "rdma_rxe 131072 0 - Live 0x0\n");
    addrs = {{"lo", *IpPrefix::parse("127.0.0.1/8")}, {"v_1", *IpPrefix::parse("10.99.0.1/24")}};
    binding = {"rxe_1", 1, false, true, true, "ACTIVE", 1024};
    write("sys/class/net/v_1/mtu", "1500\n");
    const std::string port = "sys/class/infiniband/rxe_1/ports/1/";
    write(port + "gids/0", "fe80:0000:0000:0000:0000:0000:0000:0000\n");
    write(port + "gid_attrs/types/0", "IB/RoCE v1\n");
    write(port + "gids/1", "0000:0000:0000:0000:0000:ffff:0a63:0001\n");
    write(port + "gid_attrs/types/1", "RoCE v2\n");
    write("sys/class/infiniband_verbs/uverbs0/ibdev", "rxe_1\n");
    for (const char* dev : {"all", "v_1"}) {
      const std::string d = std::string("proc/sys/net/ipv4/conf/") + dev + "/";
      write(d + "rp_filter", "0\n");
      write(d + "arp_ignore", "1\n");
      write(d + "arp_announce", "2\n");
      write(d + "accept_local", "1\n");
    }
    for (const char* n : {"dev/infiniband/rdma_cm", "dev/infiniband/uverbs0", "dev/net/tun"})
      write(n, "", 0666);
    routes = {{*IpPrefix::parse("10.99.0.0/24"), "v_1", "main", "unicast"},
              {*IpPrefix::parse("0.0.0.0/0"), "eth0", "main", "unicast"},
              {*IpPrefix::parse("10.0.0.0/8"), "eth0", "main", "unicast"},
              {*IpPrefix::parse("10.100.0.0/24"), "rc0", "main", "unicast"}};
  }
  ~FakeNode() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  FakeNode(const FakeNode&) = delete;
  FakeNode& operator=(const FakeNode&) = delete;

  void write(const std::string& path, const std::string& text, int mode = 0644) const {
    fs::create_directories(fs::path(root + path).parent_path());
    std::ofstream(root + path) << text;
    ::chmod((root + path).c_str(), static_cast<mode_t>(mode));
  }

  doctor::Host host() {
    doctor::Host h;
    h.root = root;
    h.addresses = [this]() -> Result<std::vector<doctor::NetdevAddress>> { return addrs; };
    h.rdma_bind = [this](const Endpoint& ep) -> Result<doctor::RdmaBinding> {
      if (bind_errno != 0)
        return Error::from_errno(bind_errno, "rdma_bind_addr " + ep.to_string());
      if (ep.port != 0 && listen_errno != 0)
        return Error::from_errno(listen_errno, "rdma_bind_addr " + ep.to_string());
      for (const auto& a : addrs) {
        if (a.prefix.addr == ep.addr)
          return binding;
      }
      return Error::from_errno(EADDRNOTAVAIL, "rdma_bind_addr " + ep.to_string());
    };
    h.tcp_bind = [this](const Endpoint& ep) -> Result<void> {
      if (tcp_errno != 0)
        return Error::from_errno(tcp_errno, "bind TCP " + ep.to_string());
      return {};
    };
    h.routes = [this](const std::string& netns) -> Result<std::vector<doctor::Route>> {
      routes_netns = netns;
      return routes;
    };
    h.memlock = [this](const std::string& u) -> Result<doctor::Memlock> {
      unit = u;
      return doctor::Memlock{memlock, "this shell's ulimit -l"};
    };
    h.credential_source = [this](const std::string& u,
                                 const std::string& id) -> Result<std::optional<std::string>> {
      unit = u;
      const auto it = credentials.find(id);
      return it == credentials.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    h.unit_user = unit_user;
    return h;
  }
};

constexpr const char* kToml = R"(
[node]
address = "10.99.0.1"
[tun]
address = "10.100.0.1/24"
[peers]
underlay_prefix = "10.99.0.0/24"
)";

config::Config cfg_of(const std::string& toml = kToml) {
  auto c = config::parse(toml, "rcnetd.toml");
  REQUIRE(c.ok());
  return *c;
}

std::vector<doctor::Finding> check(FakeNode& n, const std::string& toml = kToml) {
  const doctor::Host h = n.host();
  return doctor::run_checks(cfg_of(toml), "/etc/rcnet/rcnetd.toml", h);
}

std::string text_of(const std::vector<doctor::Finding>& fs) {
  std::ostringstream out;
  doctor::render_text(fs, out);
  return out.str();
}

// A key file's line: the base64 of the bytes 0..31.
constexpr const char* kKeyText = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";

// The checks with [auth] set as given (the config itself holds no auth, so
// that what the loader checks of key files does not stand in the way).
std::vector<doctor::Finding> check_auth(FakeNode& n, config::AuthMode mode,
                                        std::vector<config::AuthKeyRef> keys) {
  config::Config c = cfg_of();
  c.auth.mode = mode;
  c.auth.keys = std::move(keys);
  const doctor::Host h = n.host();
  return doctor::run_checks(c, "/etc/rcnet/rcnetd.toml", h);
}

// The name of the user running the test.
std::string self_user() {
  const passwd* pw = ::getpwuid(::geteuid());
  REQUIRE(pw != nullptr);
  return pw->pw_name;
}

// The findings of check `name` with status `s`.
std::vector<doctor::Finding> with(const std::vector<doctor::Finding>& fs, const std::string& name,
                                  doctor::Status s) {
  std::vector<doctor::Finding> out;
  for (const auto& f : fs) {
    if (f.check == name && f.status == s)
      out.push_back(f);
  }
  return out;
}

bool none_failed(const std::vector<doctor::Finding>& fs) {
  return std::none_of(fs.begin(), fs.end(),
                      [](const auto& f) { return f.status != doctor::Status::kPass; });
}

// The one finding of `name` with status `s`; its advice must not be empty.
doctor::Finding only(const std::vector<doctor::Finding>& fs, const std::string& name,
                     doctor::Status s) {
  INFO(text_of(fs));
  const auto w = with(fs, name, s);
  REQUIRE(w.size() == 1);
  CHECK_FALSE(w[0].advice.empty());
  return w[0];
}

}  // namespace

TEST_CASE("doctor: a good node passes every check, each named", "[rcnetctl][doctor]") {
  FakeNode n;
  const auto fs = check(n);
  INFO(text_of(fs));
  CHECK(none_failed(fs));
  for (const char* name : {"config", "module", "address", "device", "port", "gid", "mtu",
                           "listen-port", "sysctl", "memlock", "dev-node", "route"})
    CHECK(with(fs, name, doctor::Status::kPass).size() >= 1);
  CHECK(with(fs, "module", doctor::Status::kPass).size() == 3);  // rdma_ucm, ib_uverbs, rdma_rxe
  CHECK(with(fs, "dev-node", doctor::Status::kPass).size() == 3);
  CHECK(with(fs, "tcp-port", doctor::Status::kPass).empty());  // RoCE: no TCP port to check
  CHECK(with(fs, "iwpmd", doctor::Status::kPass).empty());
  CHECK(n.unit == "rcnetd.service");
  CHECK(n.routes_netns.empty());
  CHECK_THAT(text_of(fs), Catch::Contains("0 warnings, 0 failed"));
}

TEST_CASE("doctor: modules", "[rcnetctl][doctor]") {
  FakeNode n;
  n.write("proc/modules", "ib_uverbs 163840 1 rdma_ucm, Live 0x0\n");
  // rdma_rxe built in: /sys/module/rdma_rxe without initstate.
  fs::create_directories(n.root + "sys/module/rdma_rxe/parameters");
  const auto fs = check(n);
  const auto f = only(fs, "module", doctor::Status::kFail);
  CHECK_THAT(f.found, Catch::Contains("rdma_ucm is not loaded"));
  CHECK_THAT(f.advice, Catch::Contains("modprobe rdma_ucm"));
  CHECK(with(fs, "module", doctor::Status::kPass).size() == 2);
  // A loadable module's /sys/module directory alone is not "built in".
  fs::create_directories(n.root + "sys/module/rdma_ucm");
  n.write("sys/module/rdma_ucm/initstate", "going\n");
  CHECK(with(check(n), "module", doctor::Status::kFail).size() == 1);
}

TEST_CASE("doctor: the rail's address, device, port and driver", "[rcnetctl][doctor]") {
  FakeNode n;
  SECTION("no netdev holds the address") {
    n.addrs.pop_back();
    const auto fs = check(n);
    const auto f = only(fs, "address", doctor::Status::kFail);
    CHECK_THAT(f.found,
               Catch::Contains("10.99.0.1 (node.address (rcnetd.toml:3)) is on no netdev"));
    CHECK_THAT(f.advice, Catch::Contains("ip addr add 10.99.0.1/LEN dev NETDEV"));
    CHECK(f.rail == 0);
    CHECK(with(fs, "device", doctor::Status::kPass).empty());
  }
  SECTION("node.interface without an address") {
    n.addrs.pop_back();
    fs::create_directories(n.root + "sys/class/net/v_1");
    const auto c = R"(
[node]
interface = "v_1"
[tun]
address = "10.100.0.1/24"
)";
    std::ofstream(n.root + "x.toml") << c;
    std::ostringstream out, err;
    const doctor::Host h = n.host();
    CHECK(doctor::run(n.root + "x.toml", false, false, h, out, err) == 1);
    CHECK_THAT(out.str(), Catch::Contains("FAIL  address"));
    CHECK_THAT(out.str(), Catch::Contains("v_1 has no IPv4 address"));
  }
  SECTION("no RDMA device serves the netdev") {
    n.bind_errno = ENODEV;
    const auto f = only(check(n), "device", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("no RDMA device serves 10.99.0.1 on v_1"));
    CHECK_THAT(f.advice, Catch::Contains("rdma link add rxe_v_1 type rxe netdev v_1"));
  }
  SECTION("the port is down") {
    n.binding.active = false;
    n.binding.state = "DOWN";
    const auto f = only(check(n), "port", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rxe_1 port 1 is DOWN, not ACTIVE"));
    CHECK_THAT(f.advice, Catch::Contains("ip link set v_1 up"));
  }
  SECTION("the port is ACTIVE but its netdev has no carrier (Soft-iWARP's way)") {
    n.write("sys/class/net/v_1/carrier", "0\n");
    const auto f = only(check(n), "port", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rxe_1 port 1 is ACTIVE but v_1 has no carrier"));
    CHECK_THAT(f.advice, Catch::Contains("NO-CARRIER"));
    // With carrier, the same port passes.
    n.write("sys/class/net/v_1/carrier", "1\n");
    CHECK(with(check(n), "port", doctor::Status::kPass).size() == 1);
  }
  SECTION("InfiniBand: the SM") {
    n.binding.ethernet = false;
    n.binding.active = false;
    n.binding.state = "INIT";
    const auto fs = check(n);
    CHECK_THAT(only(fs, "port", doctor::Status::kFail).advice, Catch::Contains("subnet manager"));
    CHECK_THAT(with(fs, "gid", doctor::Status::kPass).at(0).found, Catch::Contains("IPoIB"));
  }
  SECTION("a hardware device's driver from sysfs") {
    fs::create_directories(n.root + "sys/module/mlx5_ib");
    fs::create_directories(n.root + "sys/class/infiniband/rxe_1/device/driver");
    fs::create_symlink(n.root + "sys/module/mlx5_ib",
                       n.root + "sys/class/infiniband/rxe_1/device/driver/module");
    const auto fs = check(n);
    CHECK_THAT(text_of(fs), Catch::Contains("mlx5_ib loaded (the driver of rxe_1)"));
  }
}

TEST_CASE("doctor: RoCE GID", "[rcnetctl][doctor]") {
  FakeNode n;
  const std::string port = "sys/class/infiniband/rxe_1/ports/1/";
  SECTION("only RoCE v1") {
    n.write(port + "gid_attrs/types/1", "IB/RoCE v1\n");
    const auto f = only(check(n), "gid", doctor::Status::kWarn);
    CHECK_THAT(f.advice, Catch::Contains("cma_roce_mode -d rxe_1 -p 1 -m 2"));
  }
  SECTION("none") {
    fs::remove(n.root + port + "gids/1");
    const auto f = only(check(n), "gid", doctor::Status::kFail);
    CHECK_THAT(f.found,
               Catch::Contains("no GID for 10.99.0.1 (0000:0000:0000:0000:0000:ffff:0a63:0001)"));
    CHECK_THAT(f.advice, Catch::Contains("ip addr add 10.99.0.1/24 dev v_1"));
  }
  SECTION("iWARP has none to check") {
    fs::remove(n.root + port + "gids/1");
    n.binding.iwarp = true;
    CHECK(with(check(n), "gid", doctor::Status::kPass).size() == 1);
  }
}

TEST_CASE("doctor: path MTU", "[rcnetctl][doctor]") {
  FakeNode n;
  n.binding.active_mtu = 256;
  n.write("sys/class/net/v_1/mtu", "576\n");
  const auto f = only(check(n), "mtu", doctor::Status::kWarn);
  CHECK_THAT(f.found, Catch::Contains("v_1 mtu 576, rxe_1 path MTU 256 bytes; tun.mtu 65520"));
  CHECK_THAT(f.found, Catch::Contains("256 packets on the wire"));
  CHECK_THAT(f.advice, Catch::Contains("ip link set v_1 mtu 1500"));
}

TEST_CASE("doctor: the listen port, and the TCP port for iWARP", "[rcnetctl][doctor]") {
  FakeNode n;
  SECTION("rdma_cm port taken") {
    n.listen_errno = EADDRINUSE;
    const auto fs = check(n);
    const auto f = only(fs, "listen-port", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rdma_cm port 7471 on 10.99.0.1 is taken"));
    CHECK_THAT(f.advice, Catch::Contains("rcnetctl status"));
    CHECK_THAT(f.advice, Catch::Contains("rdma res show cm_id"));
    CHECK_THAT(f.advice, Catch::Contains("node.port"));
    CHECK(with(fs, "device", doctor::Status::kPass).size() == 1);  // found by port 0
  }
  SECTION("iWARP: a TCP socket on the port") {
    n.binding.iwarp = true;
    n.tcp_errno = EADDRINUSE;
    n.write("proc/42/comm", "iwpmd\n");
    const auto fs = check(n);
    const auto f = only(fs, "tcp-port", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("TCP port 7471 on 10.99.0.1 is taken"));
    CHECK_THAT(f.advice, Catch::Contains("ss -ltnp 'sport = :7471'"));
    CHECK(with(fs, "iwpmd", doctor::Status::kPass).size() == 1);
    CHECK_THAT(text_of(fs), Catch::Contains("siw loaded (the driver of rxe_1)") ||
                                Catch::Contains("siw is not loaded"));
  }
  SECTION("iWARP without iwpmd") {
    n.binding.iwarp = true;
    n.write("proc/42/comm", "bash\n");
    const auto f = only(check(n), "iwpmd", doctor::Status::kWarn);
    CHECK_THAT(f.advice, Catch::Contains("systemctl enable --now iwpmd"));
  }
}

TEST_CASE("doctor: sysctls on a multi-homed node", "[rcnetctl][doctor]") {
  FakeNode n;
  SECTION("one netdev: nothing to check") {
    n.write("proc/sys/net/ipv4/conf/v_1/rp_filter", "1\n");
    CHECK_THAT(with(check(n), "sysctl", doctor::Status::kPass).at(0).found,
               Catch::Contains("only IPv4 netdev"));
  }
  // v_2 holds a peer's address in the rail's subnet (the lab's layout).
  n.addrs.push_back({"v_2", *IpPrefix::parse("10.99.0.2/24")});
  SECTION("the lab's values pass") {
    const auto f = with(check(n), "sysctl", doctor::Status::kPass);
    REQUIRE(f.size() == 1);
    CHECK_THAT(f[0].found, Catch::Contains("v_2 also in 10.99.0.0/24"));
  }
  SECTION("strict rp_filter") {
    n.write("proc/sys/net/ipv4/conf/v_1/rp_filter", "1\n");
    const auto f = only(check(n), "sysctl", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rp_filter is 1 (strict) on v_1"));
    CHECK_THAT(f.advice, Catch::Contains("sysctl -w net.ipv4.conf.v_1.rp_filter=2"));
  }
  SECTION("conf.all counts too") {
    n.write("proc/sys/net/ipv4/conf/all/rp_filter", "1\n");
    CHECK(with(check(n), "sysctl", doctor::Status::kFail).size() == 1);
  }
  SECTION("ARP and accept_local") {
    for (const char* d : {"all", "v_1"}) {
      n.write(std::string("proc/sys/net/ipv4/conf/") + d + "/arp_ignore", "0\n");
      n.write(std::string("proc/sys/net/ipv4/conf/") + d + "/arp_announce", "0\n");
      n.write(std::string("proc/sys/net/ipv4/conf/") + d + "/accept_local", "0\n");
    }
    const auto fs = check(n);
    const auto w = with(fs, "sysctl", doctor::Status::kWarn);
    REQUIRE(w.size() == 2);
    CHECK_THAT(w[0].advice, Catch::Contains("arp_ignore=1"));
    CHECK_THAT(w[1].advice, Catch::Contains("arp_announce=2"));
    CHECK_THAT(only(fs, "sysctl", doctor::Status::kFail).advice,
               Catch::Contains("net.ipv4.conf.v_1.accept_local=1"));
  }
  SECTION("another subnet: strict rp_filter is a warning") {
    n.addrs.back() = {"eth0", *IpPrefix::parse("192.168.1.5/24")};
    n.write("proc/sys/net/ipv4/conf/v_1/rp_filter", "1\n");
    const auto f = only(check(n), "sysctl", doctor::Status::kWarn);
    CHECK_THAT(f.found, Catch::Contains("multi-homed"));
  }
}

TEST_CASE("doctor: locked memory against what rcnetd registers", "[rcnetctl][doctor]") {
  FakeNode n;
  // Defaults: offload, 512 SRQ buffers + 256 send slots of 65,560 bytes,
  // as the data path sizes them (cm::registered_bytes).
  const cm::RegisteredBytes r = cm::registered_bytes(cfg_of().manager);
  CHECK(r.buffer == 65560);
  const std::uint64_t need = r.send_slots + r.receive;
  CHECK(need == 768 * std::uint64_t{65560});
  SECTION("unlimited") {
    CHECK_THAT(with(check(n), "memlock", doctor::Status::kPass).at(0).found,
               Catch::Contains("rcnetd registers 48.0 MiB"));
  }
  SECTION("too small") {
    n.memlock = 8 * 1024 * 1024;
    const auto f = only(check(n), "memlock", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("RLIMIT_MEMLOCK is 8.0 MiB (8388608 bytes)"));
    CHECK_THAT(f.advice, Catch::Contains("LimitMEMLOCK=infinity in rcnetd.service"));
    CHECK_THAT(f.advice, Catch::Contains("ulimit -l unlimited"));
  }
  SECTION("just enough for the buffers") {
    n.memlock = need;
    only(check(n), "memlock", doctor::Status::kWarn);
  }
  SECTION("smaller buffers need less") {
    // 768 buffers of 9,004 bytes (tun.mtu 9000 without offload): 6.6 MiB,
    // under 8 MiB but within 25% of it.
    n.memlock = 8 * 1024 * 1024;
    std::string t = kToml;
    t.insert(t.find("[peers]"), "mtu = 9000\n");
    t += "[transport]\noffload = false\n";
    const auto f = only(check(n, t), "memlock", doctor::Status::kWarn);
    CHECK_THAT(f.found, Catch::Contains("rcnetd registers 6.6 MiB"));
  }
  SECTION("an instance's unit") {
    const doctor::Host h = n.host();
    (void)doctor::run_checks(cfg_of(), "/etc/rcnet/node1.toml", h);
    CHECK(n.unit == "rcnetd@node1.service");
  }
}

TEST_CASE("doctor: device nodes rcnetd's user opens", "[rcnetctl][doctor]") {
  FakeNode n;
  SECTION("tun not world-writable") {
    ::chmod((n.root + "dev/net/tun").c_str(), 0600);
    const auto f = only(check(n), "dev-node", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("/dev/net/tun is 0600"));
    CHECK_THAT(f.advice, Catch::Contains("chmod 0666 /dev/net/tun"));
  }
  SECTION("rdma_cm missing") {
    fs::remove(n.root + "dev/infiniband/rdma_cm");
    const auto f = only(check(n), "dev-node", doctor::Status::kFail);
    CHECK_THAT(f.advice, Catch::Contains("modprobe rdma_ucm"));
  }
  SECTION("the device's uverbs node") {
    ::chmod((n.root + "dev/infiniband/uverbs0").c_str(), 0660);
    CHECK_THAT(only(check(n), "dev-node", doctor::Status::kFail).found,
               Catch::Contains("/dev/infiniband/uverbs0 is 0660"));
  }
}

TEST_CASE("doctor: routes that collide with the overlay", "[rcnetctl][doctor]") {
  FakeNode n;
  SECTION("a route into the overlay on another netdev") {
    n.routes.push_back({*IpPrefix::parse("10.100.0.0/25"), "eth0", "main", "unicast"});
    const auto f = only(check(n), "route", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("unicast route 10.100.0.0/25 dev eth0 (table main)"));
    CHECK_THAT(f.found, Catch::Contains("tun.address 10.100.0.1/24 (rcnetd.toml:5)"));
    CHECK_THAT(f.advice, Catch::Contains("ip route del 10.100.0.0/25 dev eth0 table main"));
  }
  SECTION("a blackhole in tun.netns") {
    n.routes.push_back({*IpPrefix::parse("10.100.0.0/24"), "", "main", "blackhole"});
    std::string t = kToml;
    t.insert(t.find("[peers]"), "netns = \"node1\"\n");
    const auto f = only(check(n, t), "route", doctor::Status::kFail);
    CHECK(n.routes_netns == "node1");
    CHECK_THAT(f.advice, Catch::Contains("ip -n node1 route del blackhole 10.100.0.0/24"));
  }
  SECTION("an overlay address on another netdev (table local)") {
    n.routes.push_back({*IpPrefix::parse("10.100.0.7/32"), "eth0", "local", "local"});
    CHECK(with(check(n), "route", doctor::Status::kFail).size() == 1);
  }
}

TEST_CASE("doctor: the cluster key files of [auth]", "[rcnetctl][doctor]") {
  using config::AuthMode;
  FakeNode n;
  ::unsetenv("CREDENTIALS_DIRECTORY");
  n.write("cluster.key", kKeyText, 0600);
  const std::string key = n.root + "cluster.key";
  const auto no_key_bytes = [](const std::vector<doctor::Finding>& fs) {
    std::ostringstream json;
    doctor::render_json(fs, "/etc/rcnet/rcnetd.toml", false, json);
    CHECK(text_of(fs).find("AAECAwQF") == std::string::npos);
    CHECK(json.str().find("AAECAwQF") == std::string::npos);
  };
  SECTION("auth.mode off: nothing to check") {
    const auto fs = check_auth(n, AuthMode::kOff, {{1, n.root + "missing.key"}});
    for (auto s : {doctor::Status::kPass, doctor::Status::kWarn, doctor::Status::kFail})
      CHECK(with(fs, "auth-key", s).empty());
  }
  SECTION("a file of rcnetd's user: PASS, the id and the path, no byte of the key") {
    n.unit_user = self_user();
    const auto fs = check_auth(n, AuthMode::kRequired, {{1, key}, {2, key}});
    INFO(text_of(fs));
    CHECK(none_failed(fs));
    const auto p = with(fs, "auth-key", doctor::Status::kPass);
    REQUIRE(p.size() == 2);
    CHECK_THAT(p[0].found, Catch::Contains("key id 1: " + key));
    CHECK_THAT(p[0].found, Catch::Contains("mode 0600, 32 bytes; this node proves with it"));
    CHECK_THAT(p[1].found, Catch::Contains("key id 2: " + key));
    CHECK_THAT(p[1].found, Catch::Contains("accepted from peers"));
    no_key_bytes(fs);
  }
  SECTION("missing: the command that makes a key") {
    n.unit_user = self_user();
    const auto f = only(check_auth(n, AuthMode::kRequired, {{1, n.root + "none.key"}}), "auth-key",
                        doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("key id 1: " + n.root + "none.key does not exist"));
    CHECK_THAT(f.advice, Catch::Contains("(umask 077; head -c 32 /dev/urandom | base64 > " +
                                         n.root + "none.key)"));
  }
  SECTION("readable by group") {
    n.unit_user = self_user();
    ::chmod(key.c_str(), 0640);
    const auto fs = check_auth(n, AuthMode::kRequired, {{1, key}});
    const auto f = only(fs, "auth-key", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("is mode 0640: readable by group or others"));
    CHECK(f.advice == "chmod 0600 " + key);
    no_key_bytes(fs);
  }
  SECTION("not the base64 of 32 bytes") {
    n.unit_user = self_user();
    n.write("cluster.key", "AAECAwQFBgcICQoLDA0ODw==\n", 0600);  // 16 bytes
    const auto f =
        only(check_auth(n, AuthMode::kRequired, {{1, key}}), "auth-key", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("key id 1: " + key));
    CHECK_THAT(f.advice, Catch::Contains("the base64 of 32 random bytes"));
  }
  SECTION("a file rcnetd's user cannot open") {
    // The unit's user: one that does not own the file the test writes.
    const std::string other = ::geteuid() == 0 ? "nobody" : "root";
    REQUIRE(::getpwnam(other.c_str()) != nullptr);
    n.unit_user = other;
    const auto f =
        only(check_auth(n, AuthMode::kRequired, {{1, key}}), "auth-key", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rcnetd"));
    CHECK_THAT(f.advice, Catch::Contains("chown " + other + ":" + other + " " + key));
    if (::geteuid() == 0) {
      CHECK_THAT(f.found, Catch::Contains("is root's, mode 0600: rcnetd.service runs rcnetd as "
                                          "user nobody, which cannot open it"));
      CHECK_THAT(f.advice, Catch::Contains("LoadCredential=cluster.key:" + key));
    }
  }
  SECTION("root reads a file of rcnetd's user as rcnetd would") {
    const passwd* pw = ::getpwnam("nobody");
    if (::geteuid() != 0 || pw == nullptr)
      return;  // chown needs root
    n.unit_user = "nobody";
    REQUIRE(::chown(key.c_str(), pw->pw_uid, pw->pw_gid) == 0);
    auto fs = check_auth(n, AuthMode::kRequired, {{1, key}});
    INFO(text_of(fs));
    const auto p = with(fs, "auth-key", doctor::Status::kPass);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0].found, Catch::Contains("owner nobody, mode 0600, 32 bytes"));
    n.write("cluster.key", "not a key\n", 0600);
    REQUIRE(::chown(key.c_str(), pw->pw_uid, pw->pw_gid) == 0);
    fs = check_auth(n, AuthMode::kRequired, {{1, key}});
    const auto f = only(fs, "auth-key", doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains(key));
    CHECK(f.found.find("/tmp/rcnetctl-key-") == std::string::npos);
  }
  SECTION("a credential: the source of the unit's LoadCredential=") {
    n.credentials["cluster.key"] = key;
    const auto fs = check_auth(n, AuthMode::kRequired, {{1, "cluster.key"}});
    INFO(text_of(fs));
    CHECK(n.unit == "rcnetd.service");
    const auto p = with(fs, "auth-key", doctor::Status::kPass);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0].found,
               Catch::Contains("key id 1: credential cluster.key of rcnetd.service, from " + key));
    no_key_bytes(fs);
  }
  SECTION("a credential the unit does not load") {
    const auto f = only(check_auth(n, AuthMode::kRequired, {{1, "cluster.key"}}), "auth-key",
                        doctor::Status::kFail);
    CHECK_THAT(f.found, Catch::Contains("rcnetd.service loads none of that name"));
    CHECK_THAT(f.advice, Catch::Contains("LoadCredential=cluster.key:/etc/rcnet/cluster.key"));
  }
  SECTION("two keys with one id, and optional mode") {
    n.unit_user = self_user();
    const auto fs = check_auth(n, AuthMode::kOptional, {{1, key}, {1, key}});
    CHECK_THAT(only(fs, "auth-key", doctor::Status::kFail).found,
               Catch::Contains("key id 1 is listed 2 times in auth.keys"));
    const auto w = only(fs, "auth-key", doctor::Status::kWarn);
    CHECK_THAT(w.found, Catch::Contains("unproven peers are admitted"));
    CHECK_THAT(w.advice, Catch::Contains("switch to required once every node has the key"));
    CHECK(with(fs, "auth-key", doctor::Status::kPass).size() == 2);
  }
}

TEST_CASE("doctor: rcnetctl doctor's exit status and JSON", "[rcnetctl][doctor]") {
  FakeNode n;
  const std::string path = n.root + "rcnetd.toml";
  std::ofstream(path) << kToml;
  const auto no_daemon = [](const std::string&, const std::string&) -> Result<std::string> {
    FAIL("doctor must not talk to rcnetd");
    return Error::from_errno(ECONNREFUSED, "connect");
  };
  const auto run_cli = [&](std::vector<std::string> args, std::string& out, std::string& err) {
    std::ostringstream o, e;
    const doctor::Host h = n.host();
    const int rc = rcnetctl::run(args, no_daemon, o, e, {}, &h);
    out = o.str();
    err = e.str();
    return rc;
  };
  std::string out, err;
  SECTION("good node: 0, and -j") {
    CHECK(run_cli({"doctor", "--config", path}, out, err) == 0);
    CHECK_THAT(out, Catch::Contains("PASS  listen-port"));
    CHECK(run_cli({"doctor", "-c", path, "-j"}, out, err) == 0);
    const auto j = ctl::json::parse(out);
    CHECK(j["ok"] == true);
    CHECK(j["config"] == path);
    CHECK(j["summary"]["fail"] == 0);
    REQUIRE(j["checks"].is_array());
    CHECK(j["checks"][0]["check"] == "config");
    CHECK(j["checks"][0]["status"] == "pass");
    CHECK_FALSE(j["checks"][0].contains("advice"));
  }
  SECTION("a failed check: 1, advice in the JSON") {
    n.listen_errno = EADDRINUSE;
    CHECK(run_cli({"-j", "doctor", "-c", path}, out, err) == 1);
    const auto j = ctl::json::parse(out);
    CHECK(j["ok"] == false);
    CHECK(j["summary"]["fail"] == 1);
    bool found = false;
    for (const auto& c : j["checks"]) {
      if (c["check"] == "listen-port") {
        found = true;
        CHECK(c["status"] == "fail");
        CHECK(c["rail"] == 0);
        CHECK(c["advice"].get<std::string>().find("node.port") != std::string::npos);
      }
    }
    CHECK(found);
  }
  SECTION("a malformed config: 2, naming the key and line") {
    std::ofstream(path) << "[node]\naddress = \"10.99.0.1\"\n[tun]\naddress = \"10.100.0.1/24\"\n"
                           "[timeouts]\nidle = \"often\"\n";
    CHECK(run_cli({"doctor", "-c", path}, out, err) == 2);
    CHECK_THAT(err, Catch::Contains(path + ":6: timeouts.idle"));
    CHECK(out.empty());
  }
  SECTION("an unreadable config: 2") {
    CHECK(run_cli({"doctor", "-c", n.root + "missing.toml"}, out, err) == 2);
    CHECK_THAT(err, Catch::Contains("missing.toml"));
  }
  SECTION("usage") {
    CHECK(run_cli({"doctor", "extra"}, out, err) == 2);
    CHECK(run_cli({"docter"}, out, err) == 2);
    CHECK_THAT(err, Catch::Contains("did you mean doctor"));
  }
}

}  // namespace rcnetctl_doctor_test
