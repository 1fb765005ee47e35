// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The config texts several config tests start from: the smallest valid
// file, the full example with values off the defaults, the shipped example
// with its two required keys set, and one change per row of the key table
// to the full example (the reload tests and the key table's own).
#include <algorithm>
#include <cstddef>
#include <set>
#include <string>

#include "config/example_toml.hpp"
#include "config/keys.hpp"
#include "parse_helpers.hpp"

namespace rcnet::config::test {

// The smallest valid file: the two required keys.
inline constexpr const char* kMinimal = R"(
[node]
address = "10.99.0.1"
[tun]
address = "10.100.0.1/24"
)";

// The task's full example, with values off the defaults where possible.
inline constexpr const char* kFull = R"([node]
address = "10.99.0.1"
port = 7472
[tun]
name = "rc1"
address = "10.100.0.1/24"
mtu = 9000
netns = "node1"
source_check = false
[peers]
underlay_prefix = "10.99.0.0/24"
allowed = ["10.99.0.0/24", "10.98.0.0/16"]
[[peers.static]]
overlay = "10.100.0.7"
underlay = "10.99.1.7"
[[peers.static]]
overlay = "10.100.0.8"
underlay = "10.99.1.8"
[rails]
mode = "stripe"
holddown = "2s"
[srq]
enabled = false
size = 2048
limit = 100
rq_depth = 32
[limits]
max_connections = 100
max_pending_setups = 100
send_slots = 512
qp_send_depth = 63
peer_queue_depth = 16
[timeouts]
idle = "30s"
last_wqe = "250ms"
drain = 2
disconnect = 1.5
resolve = "3s"
connect = "1m"
reaper_interval = "500ms"
[transport]
retry_count = 5
ack_timeout = 12
rnr_retry_count = 6
rnr_timer = 14
connect_retries = 4
framing = "header"
credits = 24
offload = false
poll_us = 50
[auth]
mode = "optional"
overlay = "lab-a"
keys = [{id = 1, file = "/etc/rcnet/k1.key"}, {id = 2, file = "k2.key"}]
[log]
level = "debug"
target = "journal"
[ctl]
socket = "/run/rcnet/test.sock"
group = "wheel"
)";

// kMinimal plus `block` ("[table]\nkey = value..."). A [node] or [tun] block
// goes into kMinimal's table of that name (TOML forbids defining it twice);
// any other block is appended. `last_line` gets the line of the block's last line.
inline std::string with(const std::string& block, int* last_line = nullptr) {
  std::string text = kMinimal;
  std::string body = block;
  std::size_t at = std::string::npos;
  for (const char* header : {"[node]\n", "[tun]\n"}) {
    if (block.rfind(header, 0) == 0) {
      at = text.find(header) + std::string(header).size();
      body = block.substr(std::string(header).size()) + "\n";
    }
  }
  if (at == std::string::npos) {
    at = text.size();
    body = block + "\n";
  }
  text.insert(at, body);
  if (last_line != nullptr) {
    const auto end = text.begin() + static_cast<std::ptrdiff_t>(at + body.size() - 1);
    *last_line = static_cast<int>(std::count(text.begin(), end, '\n')) + 1;
  }
  return text;
}

// The shipped example with node.address and tun.address set (uncommented):
// a template, it names neither.
inline std::string example_set() {
  std::string text = kExampleToml;
  for (const char* key : {"\n#address = ", "\n#address = "}) {
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at + 1, 1);
  }
  return text;
}

// One change per row to kFull: (row, text in kFull, replacement). Under a
// prefix rule node.address and tun.address cannot change alone (the rule
// must map one to the other, lib/config/sanity.cpp): their rows change
// kFull without its rule.
struct Change {
  const char* key;
  const char* from;
  const char* to;
  bool without_rule = false;
};
inline constexpr Change kChanges[] = {
    {"node.address", "\naddress = \"10.99.0.1\"", "\naddress = \"10.99.0.3\"", true},
    {"node.port", "\nport = 7472", "\nport = 7473"},
    {"tun.name", "\nname = \"rc1\"", "\nname = \"rc2\""},
    {"tun.address", "\naddress = \"10.100.0.1/24\"", "\naddress = \"10.100.0.2/24\"", true},
    {"tun.mtu", "\nmtu = 9000", "\nmtu = 9001"},
    {"tun.netns", "\nnetns = \"node1\"", "\nnetns = \"node2\""},
    {"tun.source_check", "\nsource_check = false", "\nsource_check = true"},
    {"peers.underlay_prefix", "\nunderlay_prefix = \"10.99.0.0/24\"",
     "\nunderlay_prefix = \"10.99.0.0/16\""},
    {"peers.allowed", "\nallowed = [\"10.99.0.0/24\", \"10.98.0.0/16\"]",
     "\nallowed = [\"10.99.0.0/24\"]"},
    {"peers.static", "\nunderlay = \"10.99.1.8\"", "\nunderlay = \"10.99.1.9\""},
    {"rails.mode", "\nmode = \"stripe\"", "\nmode = \"active-backup\""},
    {"rails.holddown", "\nholddown = \"2s\"", "\nholddown = \"0s\""},
    {"srq.enabled", "\nenabled = false", "\nenabled = true"},
    {"srq.size", "\nsize = 2048", "\nsize = 4096"},
    {"srq.limit", "\nlimit = 100", "\nlimit = 101"},
    {"srq.rq_depth", "\nrq_depth = 32", "\nrq_depth = 33"},
    {"limits.max_connections", "\nmax_connections = 100", "\nmax_connections = 101"},
    {"limits.max_pending_setups", "\nmax_pending_setups = 100", "\nmax_pending_setups = 99"},
    {"limits.send_slots", "\nsend_slots = 512", "\nsend_slots = 511"},
    {"limits.qp_send_depth", "\nqp_send_depth = 63", "\nqp_send_depth = 127"},
    {"limits.peer_queue_depth", "\npeer_queue_depth = 16", "\npeer_queue_depth = 17"},
    {"timeouts.idle", "\nidle = \"30s\"", "\nidle = \"31s\""},
    {"timeouts.last_wqe", "\nlast_wqe = \"250ms\"", "\nlast_wqe = \"251ms\""},
    {"timeouts.drain", "\ndrain = 2", "\ndrain = 3"},
    {"timeouts.disconnect", "\ndisconnect = 1.5", "\ndisconnect = 2.5"},
    {"timeouts.resolve", "\nresolve = \"3s\"", "\nresolve = \"4s\""},
    {"timeouts.connect", "\nconnect = \"1m\"", "\nconnect = \"2m\""},
    {"timeouts.reaper_interval", "\nreaper_interval = \"500ms\"", "\nreaper_interval = \"600ms\""},
    {"transport.retry_count", "\nretry_count = 5", "\nretry_count = 4"},
    {"transport.ack_timeout", "\nack_timeout = 12", "\nack_timeout = 13"},
    {"transport.rnr_retry_count", "\nrnr_retry_count = 6", "\nrnr_retry_count = 5"},
    {"transport.rnr_timer", "\nrnr_timer = 14", "\nrnr_timer = 0"},
    {"transport.connect_retries", "\nconnect_retries = 4", "\nconnect_retries = 3"},
    {"transport.framing", "\nframing = \"header\"", "\nframing = \"immediate\""},
    {"transport.credits", "\ncredits = 24", "\ncredits = 32"},
    {"transport.offload", "\noffload = false", "\noffload = true"},
    {"transport.poll_us", "\npoll_us = 50", "\npoll_us = 0"},
    {"auth.mode", "\nmode = \"optional\"", "\nmode = \"required\""},
    {"auth.overlay", "\noverlay = \"lab-a\"", "\noverlay = \"lab-b\""},
    {"auth.keys", "file = \"k2.key\"", "file = \"k3.key\""},
    {"log.level", "\nlevel = \"debug\"", "\nlevel = \"trace\""},
    {"log.target", "\ntarget = \"journal\"", "\ntarget = \"stderr\""},
    {"ctl.socket", "\nsocket = \"/run/rcnet/test.sock\"", "\nsocket = \"/run/rcnet/t2.sock\""},
    {"ctl.group", "\ngroup = \"wheel\"", "\ngroup = \"adm\""},
};

// kFull, without its prefix rule for the rows that ask.
inline std::string base(const Change& ch) {
  std::string text = kFull;
  if (ch.without_rule) {
    const std::string rule = "underlay_prefix = \"10.99.0.0/24\"\n";
    text.erase(text.find(rule), rule.size());
  }
  return text;
}

// base(ch) with `ch` made; ch.from occurs exactly once.
inline std::string changed(const Change& ch) {
  std::string text = base(ch);
  const std::size_t at = text.find(ch.from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(ch.from, at + 1) == std::string::npos);
  text.replace(at, std::string(ch.from).size(), ch.to);
  return text;
}

inline std::set<std::string> table_keys() {
  std::set<std::string> out;
  for (const Key& k : keys())
    out.emplace(k.dotted);
  return out;
}

}  // namespace rcnet::config::test
