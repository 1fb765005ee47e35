// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "config/keys.hpp"

#include <sys/un.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <type_traits>

#include "config/reader.hpp"
#include "wire/private_data.hpp"

namespace rcnet::config {

namespace {

using detail::Field;
using detail::Reader;

constexpr auto kLevelNames = log_level_names();
constexpr std::array<std::string_view, 3> kTargetNames = {"auto", "journal", "stderr"};

constexpr Duration kMinDuration = 1ms;
constexpr Duration kMaxDuration = 24h;
constexpr const char* kDurationHint = "expected a duration such as \"10s\" or \"500ms\"";
constexpr const char* kAddressHint = "expected an IPv4 or IPv6 address such as \"10.99.0.1\"";
constexpr const char* kPrefixHint =
    "expected an address/prefix such as \"10.99.0.0/24\" or \"fd00::/64\"";

// "10s", "500ms", "2m", "1h", "1.5s" → Duration. Rejects anything else,
// including negative values; the range is checked by the caller.
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

// `require_length`: the text must carry "/len" (an interface address or the
// prefix rule), not only an address.
std::optional<IpPrefix> prefix_from(Reader& r, const toml::node& n, const std::string& full,
                                    bool require_length) {
  std::optional<IpPrefix> p;
  if (n.is_string()) {
    const std::string& s = n.as_string()->get();
    if (!require_length || s.find('/') != std::string::npos)
      p = IpPrefix::parse(s);
  }
  if (!p)
    r.fail(n.source().begin.line, full, kPrefixHint);
  return p;
}

std::optional<IpAddr> address_from(Reader& r, const toml::node& n, const std::string& full) {
  std::optional<IpAddr> a;
  if (n.is_string())
    a = IpAddr::parse(n.as_string()->get());
  if (!a)
    r.fail_key(full, kAddressHint);
  return a;
}

// --- Validators: nullptr when `v` is fine, else the message -------------------------

enum class Cast : std::uint8_t { kUnicast, kBroadcast, kMulticast };

// IPv4 limited broadcast (RFC 919) and multicast 224.0.0.0/4 (RFC 5771); IPv6
// multicast ff00::/8 (RFC 4291 2.7). A subnet's directed broadcast depends on
// a prefix length the file does not give for underlay addresses.
Cast cast_of(const IpAddr& a) {
  if (a.is_v4()) {
    if (a == IpAddr::v4(0xffffffffU))
      return Cast::kBroadcast;
    return (a.bytes[0] & 0xf0U) == 0xe0U ? Cast::kMulticast : Cast::kUnicast;
  }
  return a.is_v6() && a.bytes[0] == 0xffU ? Cast::kMulticast : Cast::kUnicast;
}

// node.address: rdma_bind_addr would fail on it only when rcnetd starts.
const char* own_address(const IpAddr& a) {
  // Binding the wildcard would let rdma_cm pick any device, and an unbound
  // connect loops back on the local device (LAB.md).
  if (a == IpAddr::v4(0) || a == IpAddr::parse("::"))
    return "must be this node's own underlay address, not a wildcard";
  switch (cast_of(a)) {
    case Cast::kBroadcast:
      return "must be this node's own underlay address, not the broadcast address";
    case Cast::kMulticast:
      return "must be this node's own underlay address, not a multicast address";
    case Cast::kUnicast:
      break;
  }
  return nullptr;
}

// A static peer's underlay: an RC connection has exactly one peer, so
// rdma_resolve_addr to it could never succeed.
const char* peer_address(const IpAddr& a) {
  switch (cast_of(a)) {
    case Cast::kBroadcast:
      return "must be the peer's own underlay address, not the broadcast address";
    case Cast::kMulticast:
      return "must be the peer's own underlay address, not a multicast address";
    case Cast::kUnicast:
      break;
  }
  return nullptr;
}

const char* ifname(const std::string& s) {
  const bool bad_char = std::any_of(s.begin(), s.end(), [](char c) {
    return c == '/' || c == ':' || c == '%' || c == ' ' || c == '\t' || c == '\n' ||
           static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (s.empty() || s.size() > 15 || s == "." || s == ".." || bad_char)
    return "expected 1..15 characters without '/', ':', '%' or whitespace";
  return nullptr;
}

const char* netns_name(const std::string& s) {
  const bool bad_char = std::any_of(s.begin(), s.end(), [](char c) {
    return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (s.size() > 255 || s == "." || s == ".." || bad_char)
    return "expected a namespace name under /run/netns (no '/')";
  return nullptr;
}

const char* socket_path(const std::string& s) {
  if (s.empty() || s.front() != '/' || s.size() >= sizeof(sockaddr_un::sun_path))
    return "expected an absolute path shorter than 108 bytes";
  return nullptr;
}

const char* group_name(const std::string& s) {
  return s.empty() ? "expected a group name" : nullptr;
}

// --- Kinds: one read/get pair per TOML type --------------------------------------------
// Path names the field as member pointers from Config, e.g. &Config::manager,
// &cm::ManagerConfig::mtu; at<Path...>(c) is c.manager.mtu, const when c is.

template <auto... Path, class C>
constexpr auto& at(C& c) {
  return (c.*....*Path);
}

template <auto... Path>
void read_boolean(Field& f, Config& c) {
  if (!f.node.is_boolean())
    return f.fail("expected true or false");
  at<Path...>(c) = f.node.as_boolean()->get();
}

template <auto... Path>
Value get_boolean(const Config& c) {
  return static_cast<bool>(at<Path...>(c));
}

template <auto... Path>
void read_integer(Field& f, Config& c) {
  const std::string range = std::to_string(f.key.min) + ".." + std::to_string(f.key.max);
  if (!f.node.is_integer())
    return f.fail("expected an integer in " + range);
  const std::int64_t v = f.node.as_integer()->get();
  if (v < f.key.min || v > f.key.max)
    return f.fail(std::to_string(v) + " is out of range " + range);
  at<Path...>(c) = static_cast<std::remove_cvref_t<decltype(at<Path...>(c))>>(v);
}

template <auto... Path>
Value get_integer(const Config& c) {
  return static_cast<std::int64_t>(at<Path...>(c));
}

// A string such as "10s", or a number of seconds; 1 ms..24 h.
template <auto... Path>
void read_duration(Field& f, Config& c) {
  std::optional<Duration> d;
  if (f.node.is_string()) {
    d = parse_duration_text(f.node.as_string()->get());
  } else if (f.node.is_integer()) {
    const std::int64_t v = f.node.as_integer()->get();
    if (v >= 0 && v <= 1000000)
      d = std::chrono::seconds(v);
  } else if (f.node.is_floating_point()) {
    const double v = f.node.as_floating_point()->get();
    if (std::isfinite(v) && v >= 0 && v <= 1e6)
      d = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
  }
  if (!d)
    return f.fail(kDurationHint);
  if (*d < kMinDuration || *d > kMaxDuration)
    return f.fail("must be between 1ms and 24h");
  at<Path...>(c) = *d;
}

template <auto... Path>
Value get_duration(const Config& c) {
  return format_duration(at<Path...>(c));
}

template <auto Check, auto... Path>
void read_string(Field& f, Config& c) {
  if (!f.node.is_string())
    return f.fail("expected a string");
  at<Path...>(c) = f.node.as_string()->get();
  if (const char* msg = Check(at<Path...>(c)))
    f.fail(msg);
}

template <auto... Path>
Value get_string(const Config& c) {
  return std::string(at<Path...>(c));
}

// One of `Names`, stored as the enum whose value is the name's index.
template <const auto& Names, auto... Path>
void read_enum(Field& f, Config& c) {
  if (!f.node.is_string())
    return f.fail("expected a string");
  const auto it = std::find(Names.begin(), Names.end(), f.node.as_string()->get());
  if (it == Names.end()) {
    std::string msg = "expected one of ";
    for (std::size_t i = 0; i < Names.size(); ++i)
      msg += (i == 0 ? "" : ", ") + std::string(Names[i]);
    return f.fail(msg);
  }
  at<Path...>(c) = static_cast<std::remove_cvref_t<decltype(at<Path...>(c))>>(it - Names.begin());
}

template <const auto& Names, auto... Path>
Value get_enum(const Config& c) {
  const auto i = static_cast<std::size_t>(at<Path...>(c));
  return std::string(i < Names.size() ? Names[i] : "?");
}

template <auto Check, auto... Path>
void read_address(Field& f, Config& c) {
  if (auto a = address_from(f.r, f.node, f.full)) {
    at<Path...>(c) = *a;
    if (const char* msg = Check(*a))
      f.fail(msg);
  }
}

template <auto... Path>
Value get_address(const Config& c) {
  return at<Path...>(c).to_string();
}

// "address/length"; the field is an IpPrefix or an optional one.
template <auto... Path>
void read_prefix(Field& f, Config& c) {
  if (auto p = prefix_from(f.r, f.node, f.full, true))
    at<Path...>(c) = *p;
}

template <auto... Path>
Value get_prefix(const Config& c) {
  const auto& v = at<Path...>(c);
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, IpPrefix>) {
    return v.to_string();
  } else {
    return v ? Value(v->to_string()) : Value();
  }
}

// A list of prefixes; an element may be a bare address (a /32 or /128).
template <auto... Path>
void read_prefix_list(Field& f, Config& c) {
  const toml::array* arr = f.node.as_array();
  if (arr == nullptr)
    return f.fail("expected a list of prefixes such as [\"10.99.0.0/24\"]");
  for (std::size_t i = 0; i < arr->size() && !f.r.failed(); ++i) {
    const std::string full = f.full + "[" + std::to_string(i) + "]";
    if (auto p = prefix_from(f.r, (*arr)[i], full, false)) {
      f.r.record(full, (*arr)[i].source().begin.line);
      at<Path...>(c).push_back(*p);
    }
  }
}

template <auto... Path>
Value get_prefix_list(const Config& c) {
  std::vector<std::string> out;
  for (const IpPrefix& p : at<Path...>(c))
    out.push_back(p.to_string());
  return out;
}

// [[peers.static]]: tables of overlay and underlay, both required.
void read_static_peers(Field& f, Config& c) {
  const toml::array* arr = f.node.as_array();
  if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables()))
    return f.fail("expected [[peers.static]] tables with overlay and underlay");
  static constexpr std::array<std::string_view, 2> kFields = {"overlay", "underlay"};
  for (std::size_t i = 0; i < arr->size() && !f.r.failed(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    const std::string sec = f.full + "[" + std::to_string(i) + "]";
    f.r.only_keys(*t, sec, kFields);
    StaticPeer sp;
    for (std::string_view name : kFields) {
      const std::string full = sec + "." + std::string(name);
      if (const toml::node* n = f.r.find(t, full, name)) {
        if (auto a = address_from(f.r, *n, full)) {
          (name == "overlay" ? sp.overlay : sp.underlay) = *a;
          if (const char* msg = name == "underlay" ? peer_address(*a) : nullptr)
            f.r.fail_key(full, msg);
        }
      }
    }
    for (std::string_view name : kFields)
      f.r.require(sec + "." + std::string(name), t);
    c.static_peers.push_back(sp);
  }
}

Value get_static_peers(const Config& c) {
  std::vector<InlineTable> out;
  for (const StaticPeer& sp : c.static_peers)
    out.push_back({{"overlay", sp.overlay.to_string()}, {"underlay", sp.underlay.to_string()}});
  return out;
}

// --- Row builders ----------------------------------------------------------------------

constexpr bool kRequired = true;
constexpr bool kOptional = false;

template <auto... Path>
constexpr Key boolean(std::string_view dotted, Apply a, std::string_view help) {
  return {dotted, a, kOptional, 0, 0, "", help, &get_boolean<Path...>, &read_boolean<Path...>};
}

template <auto... Path>
constexpr Key integer(std::string_view dotted, Apply a, std::int64_t min, std::int64_t max,
                      std::string_view unit, std::string_view help) {
  return {
      dotted, a, kOptional, min, max, unit, help, &get_integer<Path...>, &read_integer<Path...>};
}

template <auto... Path>
constexpr Key duration(std::string_view dotted, Apply a, std::string_view help) {
  return {dotted,
          a,
          kOptional,
          0,
          0,
          "duration",
          help,
          &get_duration<Path...>,
          &read_duration<Path...>};
}

template <auto Check, auto... Path>
constexpr Key string(std::string_view dotted, Apply a, std::string_view help) {
  return {dotted, a, kOptional, 0, 0, "", help, &get_string<Path...>, &read_string<Check, Path...>};
}

template <const auto& Names, auto... Path>
constexpr Key enumeration(std::string_view dotted, Apply a, std::string_view help) {
  return {
      dotted, a, kOptional, 0, 0, "", help, &get_enum<Names, Path...>, &read_enum<Names, Path...>};
}

template <auto Check, auto... Path>
constexpr Key address(std::string_view dotted, Apply a, bool required, std::string_view help) {
  return {
      dotted, a, required, 0, 0, "", help, &get_address<Path...>, &read_address<Check, Path...>};
}

template <auto... Path>
constexpr Key prefix(std::string_view dotted, Apply a, bool required, std::string_view help) {
  return {dotted, a, required, 0, 0, "", help, &get_prefix<Path...>, &read_prefix<Path...>};
}

template <auto... Path>
constexpr Key prefix_list(std::string_view dotted, Apply a, std::string_view help) {
  return {
      dotted, a, kOptional, 0, 0, "", help, &get_prefix_list<Path...>, &read_prefix_list<Path...>};
}

// --- The table -------------------------------------------------------------------------
// Order: the file's sections, each key in the order the man page documents
// it. kLive keys are those cm::Manager::reconfigure() and the daemon's reload
// apply (daemon/daemon.cpp Daemon::reload); a kRestart key sizes or names
// something created once at start (the device, the TUN, the SRQ, the pools,
// the ctl socket, the log sink) or is fixed when the device is opened (the
// transport timers of rdma::DeviceConfig, which every QP of a run shares).

using M = cm::ManagerConfig;
constexpr auto kManager = &Config::manager;
constexpr auto kLocal = &M::local;

constexpr Key kKeys[] = {
    address<own_address, kManager, kLocal, &Endpoint::addr>(
        "node.address", Apply::kRestart, kRequired,
        "underlay address of the rdma_cm listener; selects the RDMA device and the node id"),
    integer<kManager, kLocal, &Endpoint::port>(
        "node.port", Apply::kRestart, 1, 65535, "",
        "rdma_cm port; every node of a fabric listens on the same one"),

    string<ifname, &Config::tun_name>("tun.name", Apply::kRestart, "TUN interface name"),
    prefix<&Config::tun_address>("tun.address", Apply::kRestart, kRequired,
                                 "overlay address and prefix length of the TUN interface"),
    integer<kManager, &M::mtu>(
        "tun.mtu", Apply::kRestart, wire::kMinMtu, wire::kMaxMtu, "bytes",
        "largest IP packet; each SRQ receive buffer and send slot is this size"),
    string<netns_name, &Config::tun_netns>(
        "tun.netns", Apply::kRestart,
        "named network namespace to move the TUN into; \"\" keeps rcnetd's"),

    prefix<&Config::underlay_prefix>(
        "peers.underlay_prefix", Apply::kLive, kOptional,
        "prefix rule: a peer's underlay address keeps the overlay address's host bits"),
    prefix_list<kManager, &M::allowed_peers>(
        "peers.allowed", Apply::kLive,
        "underlay prefixes whose REQs are accepted (others: REJ not_allowed); [] = any"),
    Key{"peers.static", Apply::kLive, kOptional, 0, 0, "",
        "explicit peers {overlay, underlay}, consulted before the prefix rule", &get_static_peers,
        &read_static_peers},

    boolean<kManager, &M::use_srq>("srq.enabled", Apply::kRestart,
                                   "one shared receive queue for every QP"),
    integer<kManager, &M::srq_size>("srq.size", Apply::kRestart, 1, 1048576, "receive WRs",
                                    "receive WRs on the SRQ"),
    integer<kManager, &M::srq_limit>(
        "srq.limit", Apply::kRestart, 0, 1048576, "receive WRs",
        "SRQ low watermark (IBV_SRQ_LIMIT); 0 = size / 8; below srq.size"),
    integer<kManager, &M::rq_depth>("srq.rq_depth", Apply::kRestart, 1, 65536, "receive WRs",
                                    "receive WRs per QP when srq.enabled = false"),

    integer<kManager, &M::max_connections>(
        "limits.max_connections", Apply::kLive, 0, 1048560, "connections",
        "connections in service before the least recently used is evicted; 0 = 128 without "
        "SRQ, 4096 with"),
    integer<kManager, &M::send_slots>(
        "limits.send_slots", Apply::kRestart, 1, 1048576, "send buffers",
        "registered send buffers (each tun.mtu bytes) shared by all QPs"),
    integer<kManager, &M::qp_send_depth>(
        "limits.qp_send_depth", Apply::kRestart, 4, 16383, "send WRs",
        "outstanding send WRs per QP (max_send_wr); 2^k - 1 fills the power-of-two SQ "
        "providers allocate"),
    integer<kManager, &M::peer_queue_depth>(
        "limits.peer_queue_depth", Apply::kLive, 1, 65536, "packets",
        "packets held per peer until its connection is ESTABLISHED (oldest dropped)"),

    duration<kManager, &M::idle_timeout>(
        "timeouts.idle", Apply::kLive,
        "no traffic either way for this long: graceful teardown (DREQ); above reaper_interval"),
    duration<kManager, &M::last_wqe_timeout>(
        "timeouts.last_wqe", Apply::kLive,
        "bound of AWAIT_LAST_WQE before the drain WR is posted anyway"),
    duration<kManager, &M::drain_timeout>("timeouts.drain", Apply::kLive,
                                          "bound of DRAINING before the QP is destroyed anyway"),
    duration<kManager, &M::disconnect_timeout>("timeouts.disconnect", Apply::kLive,
                                               "bound of DISCONNECTING (DREP / DISCONNECTED)"),
    duration<kManager, &M::resolve_timeout>("timeouts.resolve", Apply::kLive,
                                            "rdma_resolve_addr and rdma_resolve_route"),
    duration<kManager, &M::connect_timeout>("timeouts.connect", Apply::kLive,
                                            "REQ or REP sent until ESTABLISHED"),
    duration<kManager, &M::reaper_interval>(
        "timeouts.reaper_interval", Apply::kLive,
        "granularity of idle reaping and fences (not a period)"),

    integer<kManager, &M::retry_count>(
        "transport.retry_count", Apply::kLive, 0, 7, "retries",
        "RC transport retries; 7 is infinite on Soft-RoCE (a dead peer is then never reaped)"),
    integer<kManager, &M::ack_timeout>(
        "transport.ack_timeout", Apply::kRestart, 0, 31, "4.096 us * 2^value",
        "RDMA_OPTION_ID_ACK_TIMEOUT: each transport retry waits 4.096 us * 2^value (14 = 67 ms); "
        "a dead peer is reaped after (retry_count + 1) of them"),
    integer<kManager, &M::rnr_retry_count>("transport.rnr_retry_count", Apply::kLive, 0, 7,
                                           "retries", "receiver-not-ready retries; 7 = forever"),
    integer<kManager, &M::min_rnr_timer>(
        "transport.rnr_timer", Apply::kRestart, 0, 31, "IB RNR timer code",
        "min_rnr_timer of our QPs: how long a peer waits after our RNR NAK; IB code, 12 = "
        "0.64 ms, 14 = 1.28 ms, 18 = 5.12 ms, 31 = 491.52 ms, 0 = 655.36 ms"),
    integer<kManager, &M::connect_retries>(
        "transport.connect_retries", Apply::kLive, 0, 100, "attempts",
        "further connect attempts after a failed one before queued packets are dropped"),
    boolean<kManager, &M::offload>(
        "transport.offload", Apply::kRestart,
        "TUN with IFF_VNET_HDR, TSO and checksum offload; GSO super-packets up to 64 KiB travel "
        "as one SEND to peers that negotiate it; receive buffers and send slots become 64 KiB"),

    integer<&Config::poll_us>(
        "transport.poll_us", Apply::kRestart, 0, 100000, "microseconds",
        "busy-poll: after handling events, keep polling (TUN, CQ, every source) this long "
        "before sleeping; trades a core's time for wakeup latency; 0 = off"),

    enumeration<kLevelNames, &Config::log_level>(
        "log.level", Apply::kLive,
        "log level; rcnetctl log-level changes it until the next reload"),
    enumeration<kTargetNames, &Config::log_target>(
        "log.target", Apply::kRestart,
        "auto (journal when JOURNAL_STREAM is set, else stderr), journal, stderr"),

    string<socket_path, &Config::ctl_socket>("ctl.socket", Apply::kRestart,
                                             "absolute path of the ctl Unix socket"),
    string<group_name, &Config::ctl_group>(
        "ctl.group", Apply::kRestart, "group whose members may run read-only rcnetctl commands"),
};

}  // namespace

namespace detail {

void read_keys(Reader& r, Config& c) {
  std::vector<std::string_view> sections;
  for (const Key& k : kKeys) {
    if (std::find(sections.begin(), sections.end(), k.section()) == sections.end())
      sections.push_back(k.section());
  }
  r.only_keys(r.root(), "", sections);
  for (std::string_view sec : sections) {
    const toml::table* tbl = r.section(sec);
    std::vector<std::string_view> names;
    for (const Key& k : kKeys) {
      if (k.section() == sec)
        names.push_back(k.name());
    }
    if (tbl != nullptr)
      r.only_keys(*tbl, sec, names);
    for (const Key& k : kKeys) {
      if (k.section() != sec)
        continue;
      const std::string full(k.dotted);
      if (const toml::node* n = r.find(tbl, full, k.name())) {
        Field f{r, *n, full, k};
        k.read(f, c);
      }
    }
    for (const Key& k : kKeys) {
      if (k.section() == sec && k.required)
        r.require(std::string(k.dotted), tbl);
    }
  }
}

}  // namespace detail

Value Key::default_value() const {
  return required ? Value() : get(Config());
}

std::span<const Key> keys() {
  return kKeys;
}

const Key* find_key(std::string_view dotted) {
  for (const Key& k : kKeys) {
    if (k.dotted == dotted)
      return &k;
  }
  return nullptr;
}

std::string format_duration(Duration d) {
  std::int64_t ns = d.count();
  if (ns == 0)
    return "0s";
  std::string sign;
  if (ns < 0) {
    sign = "-";
    ns = -ns;
  }
  struct Unit {
    std::int64_t ns;
    const char* suffix;
  };
  for (const Unit u : {Unit{3'600'000'000'000, "h"}, Unit{60'000'000'000, "m"},
                       Unit{1'000'000'000, "s"}, Unit{1'000'000, "ms"}}) {
    if (ns % u.ns == 0)
      return sign + std::to_string(ns / u.ns) + u.suffix;
  }
  std::string frac = std::to_string(ns % 1'000'000'000);
  frac.insert(0, 9 - frac.size(), '0');
  frac.erase(frac.find_last_not_of('0') + 1);
  return sign + std::to_string(ns / 1'000'000'000) + "." + frac + "s";
}

std::string_view to_string(LogTarget t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kTargetNames.size() ? kTargetNames[i] : "?";
}

}  // namespace rcnet::config
