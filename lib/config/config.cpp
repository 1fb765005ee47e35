// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "config/config.hpp"

#include <sys/un.h>

#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>

#include "wire/private_data.hpp"

namespace rcnet::config {

namespace {

constexpr std::array<std::string_view, 7> kLevelNames = {"trace", "debug",    "info", "warn",
                                                         "error", "critical", "off"};
constexpr std::array<std::string_view, 3> kTargetNames = {"auto", "journal", "stderr"};

constexpr Duration kMinDuration = 1ms;
constexpr Duration kMaxDuration = 24h;
constexpr const char* kDurationHint = "expected a duration such as \"10s\" or \"500ms\"";

std::size_t bit_width_of(const IpAddr& a) {
  return a.is_v4() ? 32 : a.is_v6() ? 128 : 0;
}

bool get_bit(const IpAddr& a, std::size_t i) {
  return (a.bytes[i / 8] >> (7 - i % 8)) & 1u;
}

void set_bit(IpAddr& a, std::size_t i, bool v) {
  const auto m = static_cast<std::uint8_t>(1u << (7 - i % 8));
  a.bytes[i / 8] = static_cast<std::uint8_t>(v ? (a.bytes[i / 8] | m) : (a.bytes[i / 8] & ~m));
}

std::string family_name(const IpAddr& a) {
  return a.is_v4() ? "IPv4" : "IPv6";
}

// "10s", "500ms", "2m", "1h", "1.5s" → Duration. Rejects anything else,
// including negative values and values outside kMinDuration..kMaxDuration.
std::optional<Duration> parse_duration_text(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
    ++i;
  if (i == 0)
    return std::nullopt;
  const std::string number(s.substr(0, i));
  const std::string_view unit = s.substr(i);
  double scale_s = 0;
  if (unit == "ms") {
    scale_s = 1e-3;
  } else if (unit == "s") {
    scale_s = 1;
  } else if (unit == "m") {
    scale_s = 60;
  } else if (unit == "h") {
    scale_s = 3600;
  } else {
    return std::nullopt;
  }
  if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
      number.back() == '.') {
    return std::nullopt;
  }
  // strtod would follow the locale; the grammar above is plain digits and '.'.
  double v = 0;
  double frac = 0.1;
  bool after_dot = false;
  for (char c : number) {
    if (c == '.') {
      after_dot = true;
    } else if (after_dot) {
      v += (c - '0') * frac;
      frac /= 10;
    } else {
      v = v * 10 + (c - '0');
    }
  }
  const double seconds = v * scale_s;
  if (!std::isfinite(seconds) || seconds > 1e6)
    return std::nullopt;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

// Walks one parsed document, remembering the line of every key it reads so
// that cross-field checks can point at the right line.
class Reader {
 public:
  Reader(const toml::table& root, std::string_view source) : root_(root), source_(source) {}

  bool failed() const { return error_.has_value(); }
  Error take_error() { return std::move(*error_); }

  void fail(std::uint32_t line, std::string_view key, std::string_view msg) {
    if (error_)
      return;
    std::string s(source_);
    if (line > 0)
      s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) {
      s += key;
      s += ": ";
    }
    s += msg;
    error_ = Error::invalid(std::move(s));
  }
  void fail_key(std::string_view key, std::string_view msg) { fail(line_of(key), key, msg); }

  std::uint32_t line_of(std::string_view key) const {
    const auto it = lines_.find(std::string(key));
    return it == lines_.end() ? 0 : it->second;
  }

  // The table `name` ([name]), or nullptr when absent; an error if the key
  // exists but is not a table.
  const toml::table* section(std::string_view name) {
    const toml::node* n = root_.get(name);
    if (n == nullptr)
      return nullptr;
    if (!n->is_table()) {
      fail(n->source().begin.line, name, "expected a table ([" + std::string(name) + "])");
      return nullptr;
    }
    return n->as_table();
  }

  // Every key of `tbl` must be in `known`.
  void only_keys(const toml::table& tbl, std::string_view prefix,
                 std::initializer_list<std::string_view> known) {
    for (auto&& [k, v] : tbl) {
      if (std::find(known.begin(), known.end(), k.str()) != known.end())
        continue;
      const std::uint32_t line =
          k.source().begin.line > 0 ? k.source().begin.line : v.source().begin.line;
      std::string full =
          prefix.empty() ? std::string(k.str()) : std::string(prefix) + "." + std::string(k.str());
      fail(line, full, "unknown key");
    }
  }

  // Looks `key` up in `tbl`, records its line. nullptr when absent.
  const toml::node* find(const toml::table* tbl, const std::string& full, std::string_view key) {
    if (tbl == nullptr || failed())
      return nullptr;
    const toml::node* n = tbl->get(key);
    if (n != nullptr)
      lines_[full] = n->source().begin.line;
    return n;
  }

  void string(const toml::table* tbl, std::string_view sec, std::string_view key,
              std::string& out) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    if (!n->is_string())
      return fail_key(full, "expected a string");
    out = n->as_string()->get();
  }

  void boolean(const toml::table* tbl, std::string_view sec, std::string_view key, bool& out) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    if (!n->is_boolean())
      return fail_key(full, "expected true or false");
    out = n->as_boolean()->get();
  }

  template <class T>
  void integer(const toml::table* tbl, std::string_view sec, std::string_view key, T& out,
               std::int64_t lo, std::int64_t hi) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
    if (!n->is_integer())
      return fail_key(full, "expected an integer in " + range);
    const std::int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) {
      return fail_key(full, std::to_string(v) + " is out of range " + range);
    }
    out = static_cast<T>(v);
  }

  void duration(const toml::table* tbl, std::string_view sec, std::string_view key, Duration& out) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    std::optional<Duration> d;
    if (n->is_string()) {
      d = parse_duration_text(n->as_string()->get());
    } else if (n->is_integer()) {
      const std::int64_t v = n->as_integer()->get();
      if (v >= 0 && v <= 1000000)
        d = std::chrono::seconds(v);
    } else if (n->is_floating_point()) {
      const double v = n->as_floating_point()->get();
      if (std::isfinite(v) && v >= 0 && v <= 1e6) {
        d = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
      }
    }
    if (!d)
      return fail_key(full, kDurationHint);
    if (*d < kMinDuration || *d > kMaxDuration) {
      return fail_key(full, "must be between 1ms and 24h");
    }
    out = *d;
  }

  void address(const toml::table* tbl, std::string_view sec, std::string_view key, IpAddr& out) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    std::optional<IpAddr> a;
    if (n->is_string())
      a = IpAddr::parse(n->as_string()->get());
    if (!a)
      return fail_key(full, "expected an IPv4 or IPv6 address such as \"10.99.0.1\"");
    out = *a;
  }

  // `require_length`: the text must carry "/len" (an interface address).
  std::optional<IpPrefix> prefix_from(const toml::node& n, const std::string& full,
                                      bool require_length) {
    std::optional<IpPrefix> p;
    if (n.is_string()) {
      const std::string& s = n.as_string()->get();
      if (!require_length || s.find('/') != std::string::npos)
        p = IpPrefix::parse(s);
    }
    if (!p) {
      fail(n.source().begin.line, full,
           "expected an address/prefix such as \"10.99.0.0/24\" or \"fd00::/64\"");
    }
    return p;
  }

  void prefix(const toml::table* tbl, std::string_view sec, std::string_view key,
              std::optional<IpPrefix>& out, bool require_length) {
    const std::string full = std::string(sec) + "." + std::string(key);
    const toml::node* n = find(tbl, full, key);
    if (n == nullptr)
      return;
    out = prefix_from(*n, full, require_length);
  }

  void require(std::string_view sec, std::string_view key, const toml::table* tbl) {
    if (failed())
      return;
    const std::string full = std::string(sec) + "." + std::string(key);
    if (lines_.count(full) == 0) {
      fail(tbl != nullptr ? tbl->source().begin.line : 0, full, "required key is missing");
    }
  }

  void record(const std::string& full, std::uint32_t line) { lines_[full] = line; }

 private:
  const toml::table& root_;
  std::string_view source_;
  std::optional<Error> error_;
  std::map<std::string, std::uint32_t> lines_;
};

bool valid_ifname(std::string_view s) {
  if (s.empty() || s.size() > 15 || s == "." || s == "..")
    return false;
  return std::none_of(s.begin(), s.end(), [](char c) {
    return c == '/' || c == ':' || c == '%' || c == ' ' || c == '\t' || c == '\n' ||
           static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

bool valid_netns(std::string_view s) {
  if (s.size() > 255 || s == "." || s == "..")
    return false;
  return std::none_of(s.begin(), s.end(), [](char c) {
    return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

void read_document(const toml::table& root, Reader& r, Config& c) {
  cm::ManagerConfig& m = c.manager;
  r.only_keys(root, "",
              {"node", "tun", "peers", "srq", "limits", "timeouts", "transport", "log", "ctl"});

  const toml::table* node = r.section("node");
  if (node != nullptr)
    r.only_keys(*node, "node", {"address", "port"});
  r.address(node, "node", "address", m.local.addr);
  r.integer(node, "node", "port", m.local.port, 1, 65535);
  r.require("node", "address", node);
  if (!r.failed() && (m.local.addr == IpAddr::v4(0) || m.local.addr == IpAddr::parse("::"))) {
    // Binding the wildcard would let rdma_cm pick any device, and an unbound
    // connect loops back on the local device (LAB.md).
    r.fail_key("node.address", "must be this node's own underlay address, not a wildcard");
  }

  const toml::table* tun = r.section("tun");
  if (tun != nullptr)
    r.only_keys(*tun, "tun", {"name", "address", "mtu", "netns"});
  r.string(tun, "tun", "name", c.tun_name);
  if (!r.failed() && !valid_ifname(c.tun_name)) {
    r.fail_key("tun.name", "expected 1..15 characters without '/', ':', '%' or whitespace");
  }
  std::optional<IpPrefix> tun_addr;
  r.prefix(tun, "tun", "address", tun_addr, true);
  if (tun_addr) {
    c.tun_address = *tun_addr;
    m.overlay = tun_addr->addr;
  }
  r.integer(tun, "tun", "mtu", m.mtu, wire::kMinMtu, wire::kMaxMtu);
  r.string(tun, "tun", "netns", c.tun_netns);
  if (!r.failed() && !valid_netns(c.tun_netns)) {
    r.fail_key("tun.netns", "expected a namespace name under /run/netns (no '/')");
  }
  r.require("tun", "address", tun);

  const toml::table* peers = r.section("peers");
  if (peers != nullptr)
    r.only_keys(*peers, "peers", {"underlay_prefix", "allowed", "static"});
  r.prefix(peers, "peers", "underlay_prefix", c.underlay_prefix, true);
  if (const toml::node* n = r.find(peers, "peers.allowed", "allowed"); n != nullptr) {
    if (!n->is_array()) {
      r.fail_key("peers.allowed", "expected a list of prefixes such as [\"10.99.0.0/24\"]");
    } else {
      const toml::array& arr = *n->as_array();
      for (std::size_t i = 0; i < arr.size() && !r.failed(); ++i) {
        const std::string full = "peers.allowed[" + std::to_string(i) + "]";
        if (auto p = r.prefix_from(arr[i], full, false)) {
          r.record(full, arr[i].source().begin.line);
          m.allowed_peers.push_back(*p);
        }
      }
    }
  }
  if (const toml::node* n = r.find(peers, "peers.static", "static"); n != nullptr) {
    const toml::array* arr = n->as_array();
    if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables())) {
      r.fail_key("peers.static", "expected [[peers.static]] tables with overlay and underlay");
    } else {
      for (std::size_t i = 0; i < arr->size() && !r.failed(); ++i) {
        const toml::table* t = (*arr)[i].as_table();
        const std::string sec = "peers.static[" + std::to_string(i) + "]";
        r.only_keys(*t, sec, {"overlay", "underlay"});
        StaticPeer sp;
        r.address(t, sec, "overlay", sp.overlay);
        r.address(t, sec, "underlay", sp.underlay);
        r.require(sec, "overlay", t);
        r.require(sec, "underlay", t);
        c.static_peers.push_back(sp);
      }
    }
  }

  const toml::table* srq = r.section("srq");
  if (srq != nullptr)
    r.only_keys(*srq, "srq", {"enabled", "size", "limit", "rq_depth"});
  r.boolean(srq, "srq", "enabled", m.use_srq);
  r.integer(srq, "srq", "size", m.srq_size, 1, 1048576);
  r.integer(srq, "srq", "limit", m.srq_limit, 0, 1048576);
  r.integer(srq, "srq", "rq_depth", m.rq_depth, 1, 65536);

  const toml::table* limits = r.section("limits");
  if (limits != nullptr) {
    r.only_keys(*limits, "limits", {"max_connections", "send_slots", "peer_queue_depth"});
  }
  r.integer(limits, "limits", "max_connections", m.max_connections, 0, 1048560);
  r.integer(limits, "limits", "send_slots", m.send_slots, 1, 1048576);
  r.integer(limits, "limits", "peer_queue_depth", m.peer_queue_depth, 1, 65536);

  const toml::table* to = r.section("timeouts");
  if (to != nullptr) {
    r.only_keys(
        *to, "timeouts",
        {"idle", "last_wqe", "drain", "disconnect", "resolve", "connect", "reaper_interval"});
  }
  r.duration(to, "timeouts", "idle", m.idle_timeout);
  r.duration(to, "timeouts", "last_wqe", m.last_wqe_timeout);
  r.duration(to, "timeouts", "drain", m.drain_timeout);
  r.duration(to, "timeouts", "disconnect", m.disconnect_timeout);
  r.duration(to, "timeouts", "resolve", m.resolve_timeout);
  r.duration(to, "timeouts", "connect", m.connect_timeout);
  r.duration(to, "timeouts", "reaper_interval", m.reaper_interval);

  const toml::table* tr = r.section("transport");
  if (tr != nullptr) {
    r.only_keys(*tr, "transport", {"retry_count", "rnr_retry_count", "connect_retries"});
  }
  r.integer(tr, "transport", "retry_count", m.retry_count, 0, 7);
  r.integer(tr, "transport", "rnr_retry_count", m.rnr_retry_count, 0, 7);
  r.integer(tr, "transport", "connect_retries", m.connect_retries, 0, 100);

  const toml::table* log = r.section("log");
  if (log != nullptr)
    r.only_keys(*log, "log", {"level", "target"});
  std::string level(to_string(c.log_level));
  r.string(log, "log", "level", level);
  if (auto l = parse_log_level(level)) {
    c.log_level = *l;
  } else {
    r.fail_key("log.level", "expected one of trace, debug, info, warn, error, critical, off");
  }
  std::string target(to_string(c.log_target));
  r.string(log, "log", "target", target);
  const auto t = std::find(kTargetNames.begin(), kTargetNames.end(), target);
  if (t == kTargetNames.end()) {
    r.fail_key("log.target", "expected one of auto, journal, stderr");
  } else {
    c.log_target = static_cast<LogTarget>(t - kTargetNames.begin());
  }

  const toml::table* ctl = r.section("ctl");
  if (ctl != nullptr)
    r.only_keys(*ctl, "ctl", {"socket", "group"});
  r.string(ctl, "ctl", "socket", c.ctl_socket);
  if (!r.failed() && (c.ctl_socket.empty() || c.ctl_socket.front() != '/' ||
                      c.ctl_socket.size() >= sizeof(sockaddr_un::sun_path))) {
    r.fail_key("ctl.socket", "expected an absolute path shorter than 108 bytes");
  }
  r.string(ctl, "ctl", "group", c.ctl_group);
  if (!r.failed() && c.ctl_group.empty())
    r.fail_key("ctl.group", "expected a group name");
}

// Checks that involve more than one key. Each names the key to fix.
void cross_check(Reader& r, Config& c) {
  const cm::ManagerConfig& m = c.manager;
  if (r.failed())
    return;
  if (c.tun_address.addr.is_v6() && m.mtu < 1280) {
    return r.fail_key("tun.mtu", "an IPv6 overlay needs at least 1280 (RFC 8200)");
  }
  if (m.srq_limit >= m.srq_size) {
    return r.fail_key("srq.limit", "must be below srq.size (" + std::to_string(m.srq_size) + ")");
  }
  if (m.idle_timeout <= m.reaper_interval) {
    return r.fail_key("timeouts.idle", "must be longer than timeouts.reaper_interval");
  }
  const IpAddr& self = m.local.addr;
  if (c.underlay_prefix) {
    const IpPrefix& up = *c.underlay_prefix;
    if (up.addr.family != self.family) {
      return r.fail_key("peers.underlay_prefix",
                        "is " + family_name(up.addr) + " but node.address is " + family_name(self));
    }
    const std::size_t overlay_host = bit_width_of(c.tun_address.addr) - c.tun_address.length;
    const std::size_t underlay_host = bit_width_of(up.addr) - up.length;
    if (underlay_host < overlay_host) {
      return r.fail_key("peers.underlay_prefix",
                        "has " + std::to_string(underlay_host) + " host bits, fewer than the " +
                            std::to_string(overlay_host) + " of tun.address");
    }
  }
  for (std::size_t i = 0; i < m.allowed_peers.size(); ++i) {
    if (m.allowed_peers[i].addr.family != self.family) {
      return r.fail_key("peers.allowed[" + std::to_string(i) + "]",
                        "is " + family_name(m.allowed_peers[i].addr) + " but node.address is " +
                            family_name(self));
    }
  }
  for (std::size_t i = 0; i < c.static_peers.size(); ++i) {
    const StaticPeer& sp = c.static_peers[i];
    const std::string sec = "peers.static[" + std::to_string(i) + "]";
    if (!c.tun_address.contains(sp.overlay)) {
      return r.fail_key(sec + ".overlay", sp.overlay.to_string() + " is outside tun.address " +
                                              c.tun_address.to_string());
    }
    if (sp.overlay == c.tun_address.addr) {
      return r.fail_key(sec + ".overlay", "is this node's own tun.address");
    }
    if (sp.underlay.family != self.family) {
      return r.fail_key(sec + ".underlay", "is " + family_name(sp.underlay) +
                                               " but node.address is " + family_name(self));
    }
    if (sp.underlay == self)
      return r.fail_key(sec + ".underlay", "is this node's own address");
    for (std::size_t j = 0; j < i; ++j) {
      if (c.static_peers[j].overlay == sp.overlay) {
        return r.fail_key(
            sec + ".overlay",
            "duplicate: " + sp.overlay.to_string() + " is already peers.static[" +
                std::to_string(j) + "] (line " +
                std::to_string(r.line_of("peers.static[" + std::to_string(j) + "].overlay")) + ")");
      }
    }
  }
}

}  // namespace

std::string_view to_string(LogLevel l) {
  const auto i = static_cast<std::size_t>(l);
  return i < kLevelNames.size() ? kLevelNames[i] : "?";
}

std::optional<LogLevel> parse_log_level(std::string_view name) {
  const auto it = std::find(kLevelNames.begin(), kLevelNames.end(), name);
  if (it == kLevelNames.end())
    return std::nullopt;
  return static_cast<LogLevel>(it - kLevelNames.begin());
}

std::string_view to_string(LogTarget t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kTargetNames.size() ? kTargetNames[i] : "?";
}

cm::ManagerConfig Config::default_manager() {
  cm::ManagerConfig m;
  m.local.port = kDefaultPort;
  return m;
}

std::optional<IpAddr> Config::underlay_for(const IpAddr& overlay) const {
  for (const StaticPeer& sp : static_peers) {
    if (sp.overlay == overlay)
      return sp.underlay;
  }
  if (!underlay_prefix || tun_address.addr.empty() || !tun_address.contains(overlay)) {
    return std::nullopt;
  }
  const std::size_t width = bit_width_of(overlay);
  const std::size_t host_bits = width - tun_address.length;
  bool any_zero = false;
  bool any_one = false;
  for (std::size_t i = width - host_bits; i < width; ++i) {
    (get_bit(overlay, i) ? any_one : any_zero) = true;
  }
  if (host_bits > 0 && !any_one)
    return std::nullopt;
  if (overlay.is_v4() && host_bits > 1 && !any_zero)
    return std::nullopt;

  const IpPrefix& up = *underlay_prefix;
  const std::size_t uwidth = bit_width_of(up.addr);
  if (uwidth - up.length < host_bits)
    return std::nullopt;  // validated by parse()
  IpAddr out = up.addr;
  for (std::size_t i = up.length; i < uwidth; ++i)
    set_bit(out, i, false);
  for (std::size_t k = 0; k < host_bits; ++k) {
    set_bit(out, uwidth - 1 - k, get_bit(overlay, width - 1 - k));
  }
  return out;
}

std::optional<Endpoint> Config::peer_endpoint_for(const IpAddr& overlay) const {
  auto u = underlay_for(overlay);
  if (!u)
    return std::nullopt;
  return Endpoint{*u, manager.local.port};
}

Result<Config> parse(std::string_view toml_text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Error::invalid(std::string(source_name) + ":" + std::to_string(b.line) + ":" +
                          std::to_string(b.column) +
                          ": TOML syntax error: " + std::string(e.description()));
  } catch (const std::exception& e) {
    return Error::invalid(std::string(source_name) + ": " + e.what());
  }
  Config c;
  Reader r(root, source_name);
  read_document(root, r, c);
  cross_check(r, c);
  if (r.failed())
    return r.take_error();
  return c;
}

Result<Config> load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::from_errno(errno != 0 ? errno : ENOENT, "open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error::from_errno(errno != 0 ? errno : EIO, "read " + path);
  return parse(text.str(), path);
}

std::vector<std::string> restart_required(const Config& a, const Config& b) {
  std::vector<std::string> keys;
  const cm::ManagerConfig& x = a.manager;
  const cm::ManagerConfig& y = b.manager;
  const auto diff = [&](bool differs, const char* key) {
    if (differs)
      keys.emplace_back(key);
  };
  diff(x.local.addr != y.local.addr, "node.address");
  diff(x.local.port != y.local.port, "node.port");
  diff(a.tun_name != b.tun_name, "tun.name");
  diff(a.tun_address != b.tun_address, "tun.address");
  diff(x.mtu != y.mtu, "tun.mtu");
  diff(a.tun_netns != b.tun_netns, "tun.netns");
  diff(x.use_srq != y.use_srq, "srq.enabled");
  diff(x.srq_size != y.srq_size, "srq.size");
  diff(x.srq_limit != y.srq_limit, "srq.limit");
  diff(x.rq_depth != y.rq_depth, "srq.rq_depth");
  diff(x.send_slots != y.send_slots, "limits.send_slots");
  diff(a.log_target != b.log_target, "log.target");
  diff(a.ctl_socket != b.ctl_socket, "ctl.socket");
  diff(a.ctl_group != b.ctl_group, "ctl.group");
  return keys;
}

}  // namespace rcnet::config
