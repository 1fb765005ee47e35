// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl's tables and lines; render_prometheus is in prometheus.cpp,
// render_config in config_text.cpp.
#include "ctl/render.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ctl/json_fields.hpp"

namespace rcnet::ctl {

using detail::array_of;
using detail::count;
using detail::field;
using detail::number;
using detail::text;

namespace {

// A peer's overlay addresses: "overlays" joined by "," (one per family of
// tun.address), or "overlay" from a daemon that sends no list.
std::string overlays(const json& j) {
  const json* list = field(j, "overlays");
  if (list == nullptr || !list->is_array() || list->empty())
    return text(j, "overlay");
  std::string out;
  for (const json& a : *list)
    out += (out.empty() ? "" : ",") + text(&a);
  return out;
}

std::string duration(const json& j, const char* key) {
  const auto ms = number(j, key);
  return ms ? format_duration_ms(*ms) : "-";
}

// "packets/bytes" for TX and RX columns.
std::string traffic(const json& j, const char* packets, const char* bytes) {
  const auto p = count(j, packets);
  const auto b = count(j, bytes);
  return (p ? std::to_string(*p) : "-") + "/" + (b ? format_bytes(*b) : "-");
}

// Columns separated by two spaces, numbers right-aligned, no trailing blanks.
class Table {
 public:
  struct Column {
    std::string title;
    bool right = false;
  };
  explicit Table(std::vector<Column> cols) : cols_(std::move(cols)) {}
  void add(std::vector<std::string> row) {
    row.resize(cols_.size(), "-");
    rows_.push_back(std::move(row));
  }
  std::string str() const {
    std::vector<std::size_t> width(cols_.size());
    for (std::size_t c = 0; c < cols_.size(); ++c)
      width[c] = cols_[c].title.size();
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < cols_.size(); ++c)
        width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    std::vector<std::string> header;
    for (const auto& col : cols_)
      header.push_back(col.title);
    line(out, header, width);
    for (const auto& row : rows_)
      line(out, row, width);
    return out;
  }

 private:
  void line(std::string& out, const std::vector<std::string>& cells,
            const std::vector<std::size_t>& width) const {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0)
        l += "  ";
      const std::string pad(width[c] - cells[c].size(), ' ');
      l += cols_[c].right ? pad + cells[c] : cells[c] + pad;
    }
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    out += l + "\n";
  }
  std::vector<Column> cols_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

std::string format_duration_ms(double ms) {
  if (!std::isfinite(ms) || ms < 0)
    return "-";
  char buf[48];
  // Ranges are decided in double: the value comes over a socket and may be
  // beyond what a long long holds (llround would then return garbage).
  if (ms < 999.5) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(std::llround(ms)));
    return buf;
  }
  if (ms < 59950) {
    const auto tenths = static_cast<long long>(std::llround(ms / 100));
    std::snprintf(buf, sizeof buf, "%lld.%llds", tenths / 10, tenths % 10);
    return buf;
  }
  const double secs = std::floor(ms / 1000);
  if (secs < 86400) {
    const auto s = static_cast<long long>(secs);
    if (s < 3600)
      std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    else
      std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    return buf;
  }
  const double days = std::floor(secs / 86400);
  if (days >= 1e6) {  // 2700 years: no real duration, but still not garbage
    std::snprintf(buf, sizeof buf, "%.3gd", days);
    return buf;
  }
  const auto hours = static_cast<int>(std::fmod(secs, 86400) / 3600);
  std::snprintf(buf, sizeof buf, "%.0fd%02dh", days, hours);
  return buf;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + "B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  // Move up a unit before "1024.0KiB" would be printed.
  while (v >= 1023.95 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%s", v, kUnits[u]);
  return buf;
}

namespace {

// The ctl server's "daemon" object (CtlBackend::daemon_status): absent when
// the status came from the manager alone, then no line is printed.
std::string daemon_line(const json& d) {
  const json* dm = field(d, "daemon");
  if (dm == nullptr || !dm->is_object())
    return {};
  std::string line = "rcnetd " + text(*dm, "version") + "  pid " + text(*dm, "pid");
  if (const auto up = number(*dm, "uptime_ms"))
    line += "  up " + format_duration_ms(*up);
  if (const json* tun = field(*dm, "tun"); tun != nullptr && tun->is_object()) {
    line += "  tun " + text(*tun, "name") + " " + text(*tun, "address");
    if (const json* six = field(*tun, "address6"); six != nullptr && six->is_string())
      line += " " + six->get<std::string>();
    if (const std::string ns = text(*tun, "netns"); ns != "-")
      line += " (netns " + ns + ")";
  }
  line += "  log " + text(*dm, "log_level");
  // glibc's heap (absent from an older rcnetd's status): in use by rcnetd,
  // and held by the allocator from the kernel.
  if (const json* heap = field(*dm, "heap"); heap != nullptr && heap->is_object()) {
    const auto in_use = count(*heap, "in_use_bytes");
    const auto held = count(*heap, "arena_bytes");
    if (in_use && held)
      line += "  heap " + format_bytes(*in_use) + " in use, " + format_bytes(*held) + " held";
  }
  if (const json* st = field(*dm, "stopping"); st != nullptr && st->is_boolean() && st->get<bool>())
    line += "  STOPPING";
  return line + "\n";
}

// "rails: 0 up, 1 down  mode active-backup  peers without a redundant link 1",
// from the status' rails (absent from an older rcnetd's status: no line).
std::string rails_line(const json& d) {
  const json* rails = field(d, "rails");
  if (rails == nullptr || !rails->is_array())
    return {};
  std::string list;
  for (const json& r : *rails)
    list += (list.empty() ? "" : ", ") + text(r, "rail") + " " + text(r, "state");
  return "rails: " + (list.empty() ? std::string("none") : list) + "  mode " +
         text(d, "rails_mode") + "  peers without a redundant link " +
         text(d, "peers_without_redundancy") + "\n";
}

}  // namespace

std::string render_status(const json& d) {
  std::string out = daemon_line(d);
  out += "node " + text(d, "node") + "  incarnation " + text(d, "incarnation") + "\n";
  // device_removed: lost, rcnetd retries opening it (Manager::readopt).
  const json* removed = field(d, "device_removed");
  const bool gone = removed != nullptr && removed->is_boolean() && removed->get<bool>();
  out += "local " + text(d, "local") + "  device " + text(d, "device") +
         (gone ? " (removed)" : "") + "  mtu " + text(d, "mtu") + "  offload " +
         text(d, "offload") + "\n";
  // A device that differs from InfiniBand and RoCE (iWARP) says how:
  // framing, credits per connection and the connection limit they leave.
  if (const json* tr = field(d, "transport");
      tr != nullptr && tr->is_string() && tr->get<std::string>() != "infiniband") {
    out += "transport " + text(d, "transport") + "  framing " + text(d, "framing") + "  credits " +
           text(d, "credits") + "  max connections " + text(d, "max_connections") + "\n";
  }
  out += "peers " + text(d, "peers") + "  connections " + text(d, "connections") +
         "  established " + text(d, "established") + "  qps " + text(d, "qps") + "  in teardown " +
         text(d, "in_teardown") + "\n";
  const json* slots = field(d, "send_slots");
  out += "send slots " + (slots ? text(*slots, "free") : "-") + "/" +
         (slots ? text(*slots, "total") : "-") + " free\n";
  if (const json* srq = field(d, "srq"); srq != nullptr && srq->is_object()) {
    const json* enabled = field(*srq, "enabled");
    if (enabled != nullptr && enabled->is_boolean() && !enabled->get<bool>()) {
      out += "srq off\n";
    } else {
      out += "srq " + text(*srq, "posted") + "/" + text(*srq, "size") + " posted  limit " +
             text(*srq, "limit") + "  limit events " + text(*srq, "limit_events") + "  buffers " +
             text(*srq, "buffer_size") + " bytes\n";
    }
  }
  if (std::string rails = rails_line(d); !rails.empty())
    out += rails;
  if (const json* states = field(d, "states"); states != nullptr && states->is_object()) {
    std::string line;
    for (auto it = states->begin(); it != states->end(); ++it) {
      if (it->is_number() && it->get<double>() != 0)
        line += "  " + it.key() + " " + text(&*it);
    }
    if (!line.empty())
      out += "states" + line + "\n";
  }
  return out;
}

namespace {

// The AUTH column: "proven:<key id>", "awaiting", "unproven", or "-"
// (auth.mode off, or no connection).
std::string auth_cell(const json& o) {
  const std::string a = text(o, "auth");
  if (a == "off")
    return "-";
  if (a == "proven" && number(o, "key_id"))
    return a + ":" + text(o, "key_id");
  return a;
}

}  // namespace

std::string render_peers(const json& d) {
  Table t({{"NODE", true},
           {"RAIL", true},
           {"UNDERLAY"},
           {"OVERLAY"},
           {"INCARNATION"},
           {"STATE"},
           {"AUTH"},
           {"QUEUED", true},
           {"CONN", true},
           {"LAST-TRY", true},
           {"RESULT"},
           {"RETRY", true},
           {"CARRIES"}});
  for (const json& p : array_of(d, "peers")) {
    // Last, so that a blank (not carrying) leaves the other columns' words in place.
    const json* carries = field(p, "carries");
    const bool yes = carries != nullptr && carries->is_boolean() && carries->get<bool>();
    // Why a peer is unreachable: its last attempt (how long ago), how that
    // ended (and when, when it is not the attempt's own start), and when
    // the next one goes out.
    std::string result = text(p, "last_result");
    if (result != "-" && number(p, "last_result_ms"))
      result += " (" + duration(p, "last_result_ms") + " ago)";
    const std::string retry =
        number(p, "next_retry_ms") ? "in " + duration(p, "next_retry_ms") : "-";
    t.add({text(p, "node"), text(p, "rail"), text(p, "underlay"), overlays(p),
           text(p, "incarnation"), text(p, "state"), auth_cell(p), text(p, "queue_depth"),
           text(p, "conn_id"),
           number(p, "last_attempt_ms") ? duration(p, "last_attempt_ms") + " ago" : "-", result,
           retry, yes ? "*" : ""});
  }
  return t.str();
}

std::string render_route(const json& d) {
  const std::string addr = text(d, "address");
  if (field(d, "node") == nullptr || field(d, "node")->is_null())
    return addr + ": no route: " + text(d, "reason") + "\n";
  std::string out = addr + " via peer " + text(d, "node") + " overlay " + overlays(d) + " rail " +
                    text(d, "rail") + " underlay " + text(d, "underlay") + " state " +
                    text(d, "state") + "\n";
  if (text(d, "reason") != "-")
    out += "  " + text(d, "reason") + "\n";
  const json& rails = array_of(d, "rails");
  if (rails.size() > 1) {
    for (const json& r : rails) {
      const json* carries = field(r, "carries");
      const bool yes = carries != nullptr && carries->is_boolean() && carries->get<bool>();
      out += "  rail " + text(r, "rail") + " underlay " + text(r, "underlay") + " state " +
             text(r, "state") + (yes ? " (carries)" : "") + "\n";
    }
  }
  return out;
}

std::string render_reload(const json& d) {
  const json& keys = array_of(d, "applied");
  if (keys.empty())
    return "reload applied: no key changed\n";
  std::string out = "reload applied:";
  for (const json& k : keys)
    out += " " + text(&k);
  return out + "\n";
}

std::string render_qps(const json& d) {
  Table t({{"PEER", true},
           {"RAIL", true},
           {"ADDR"},
           {"QPN", true},
           {"RQPN", true},
           {"STATE"},
           {"GSO"},
           {"IN-STATE", true},
           {"AGE", true},
           {"IDLE", true},
           {"TX", true},
           {"RX", true},
           {"REASON"}});
  for (const json& q : array_of(d, "qps")) {
    t.add({text(q, "peer_node"), text(q, "rail"), text(q, "peer_addr"), text(q, "qpn"),
           text(q, "remote_qpn"), text(q, "state"), text(q, "offload"),
           duration(q, "time_in_state_ms"), duration(q, "age_ms"), duration(q, "idle_ms"),
           traffic(q, "tx_packets", "tx_bytes"), traffic(q, "rx_packets", "rx_bytes"),
           text(q, "teardown_reason")});
  }
  return t.str();
}

std::string render_connections(const json& d) {
  Table t({{"PEER", true},
           {"RAIL", true},
           {"ADDR"},
           {"OVERLAY"},
           {"QPN", true},
           {"RQPN", true},
           {"STATE"},
           {"AUTH"},
           {"GSO"},
           {"IN-STATE", true},
           {"AGE", true},
           {"IDLE", true},
           {"TX", true},
           {"RX", true}});
  for (const json& q : array_of(d, "connections")) {
    t.add({text(q, "peer_node"), text(q, "rail"), text(q, "peer_addr"), overlays(q), text(q, "qpn"),
           text(q, "remote_qpn"), text(q, "state"), auth_cell(q), text(q, "offload"),
           duration(q, "time_in_state_ms"), duration(q, "age_ms"), duration(q, "idle_ms"),
           traffic(q, "tx_packets", "tx_bytes"), traffic(q, "rx_packets", "rx_bytes")});
  }
  return t.str();
}

std::string render_rails(const json& d) {
  std::string out = "mode " + text(d, "mode") + "\n";
  Table t({{"RAIL", true},
           {"ADDRESS"},
           {"DEVICE/PORT"},
           {"STATE"},
           {"LINKS", true},
           {"CARRYING", true},
           {"TX", true},
           {"RX", true},
           {"CHANGED", true},
           {"LOSS/RETURN"},
           {"CAUSE"}});
  // Which path noticed the device's last loss and return, in a word each
  // ("monitor", "async", "poll"; "-" for none).
  const auto path = [](const json& r, const char* key) -> std::string {
    const json* v = field(r, key);
    if (v == nullptr || !v->is_string())
      return "-";
    const std::string s = v->get<std::string>();
    return s == "netlink monitor" ? "monitor" : s == "async event" ? "async" : s;
  };
  for (const json& r : array_of(d, "rails")) {
    std::string address = text(r, "address");
    if (address.find(':') != std::string::npos)
      address = "[" + address + "]";               // IPv6, as Endpoint::to_string writes it
    const std::string device = text(r, "device");  // "-" while removed
    const auto tx = count(r, "tx_bytes");
    const auto rx = count(r, "rx_bytes");
    t.add({text(r, "rail"), address + ":" + text(r, "port"),
           device == "-" ? device : device + "/" + text(r, "device_port"), text(r, "state"),
           text(r, "links"), text(r, "carrying"), tx ? format_bytes(*tx) : "-",
           rx ? format_bytes(*rx) : "-", duration(r, "since_change_ms"),
           path(r, "removed_by") + "/" + path(r, "readopted_by"), text(r, "cause")});
  }
  out += t.str();
  out += "peers without a redundant link: " + text(d, "peers_without_redundancy") + "\n";
  return out;
}

std::string render_srq(const json& d) {
  Table t({{"ENABLED"},
           {"SIZE", true},
           {"POSTED", true},
           {"FILL", true},
           {"LIMIT", true},
           {"LIMIT-EVENTS", true}});
  std::string fill = "-";
  const auto size = count(d, "size");
  const auto posted = count(d, "posted");
  if (size && posted && *size > 0)
    fill = std::to_string(*posted * 100 / *size) + "%";
  t.add({text(d, "enabled"), text(d, "size"), text(d, "posted"), fill, text(d, "limit"),
         text(d, "limit_events")});
  return t.str();
}

std::string render_stats(const json& d) {
  Table t({{"NAME"}, {"VALUE", true}, {"HELP"}});
  for (const json& c : array_of(d, "counters")) {
    t.add({text(c, "name"), text(c, "value"), text(c, "help")});
  }
  return t.str();
}

std::string render_audit(const json& d) {
  const json* ok = field(d, "ok");
  const bool good = ok != nullptr && ok->is_boolean() && ok->get<bool>();
  std::string out = std::string("audit ") + (good ? "ok" : "MISMATCH") + ": daemon " +
                    text(d, "daemon_qps") + " QPs, kernel " + text(d, "kernel_qps") + " QPs";
  // The daemon adds the verbs seam's own count; the library's audit_json
  // alone has none.
  if (field(d, "seam_qps") != nullptr)
    out += ", seam " + text(d, "seam_qps") + " QPs";
  out += "\n";
  const auto list = [&](const char* key, const char* title) {
    const json& arr = array_of(d, key);
    if (arr.empty())
      return;
    out += title;
    for (const json& q : arr)
      out += " " + text(&q);
    out += "\n";
  };
  list("kernel_only", "kernel only (leaked, or unknown to rcnetd):");
  list("daemon_only", "daemon only (gone from the kernel):");
  list("seam_only", "seam only (live in the verbs seam, forgotten by the manager: leaked):");
  list("manager_only", "manager only (the verbs seam holds no such QP):");
  return out;
}

std::string render_disconnect(const json& d) {
  return "disconnecting peer " + text(d, "disconnected") + "\n";
}

std::string render_reap(const json& d) {
  const auto n = count(d, "reaped");
  return "reaped " + text(d, "reaped") + (n && *n == 1 ? " connection\n" : " connections\n");
}

std::string render_log_level(const json& d) {
  return "log level " + text(d, "previous") + " -> " + text(d, "level") + "\n";
}

std::string render_monitor(const json&) {
  return "monitoring rcnetd's connection events\n";
}

std::string render(Command c, const json& data) {
  if (static_cast<std::size_t>(c) < std::size(kCommands))
    return info(c).render(data);
  return data.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// "HH:MM:SS.mmm" in local time, from Unix epoch milliseconds.
std::string clock_text(const json& ev) {
  const auto ms = number(ev, "time_ms");
  if (!ms || !std::isfinite(*ms) || *ms < 0 || *ms > 1e15)
    return "--:--:--.---";
  const auto total = static_cast<std::int64_t>(*ms);
  const std::time_t secs = static_cast<std::time_t>(total / 1000);
  std::tm tm{};
  if (::localtime_r(&secs, &tm) == nullptr)
    return "--:--:--.---";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(total % 1000));
  return buf;
}

// "10.99.0.2" from "10.99.0.2:7471", "fd00::2" from "[fd00::2]:7471".
std::string host_of(const std::string& endpoint) {
  if (endpoint.size() > 2 && endpoint.front() == '[') {
    const auto close = endpoint.find(']');
    if (close != std::string::npos)
      return endpoint.substr(1, close - 1);
  }
  const auto colon = endpoint.rfind(':');
  if (colon != std::string::npos && endpoint.find(':') == colon)
    return endpoint.substr(0, colon);
  return endpoint;
}

}  // namespace

std::string render_event(const json& ev) {
  std::string out = clock_text(ev) + " ";
  const std::string kind = text(ev, "kind");
  const std::string peer = host_of(text(ev, "peer_addr"));
  const std::string reason = text(ev, "reason");
  // " (cause)", or nothing when there is none.
  const std::string cause = text(ev, "cause");
  const std::string why = cause != "-" ? " (" + cause + ")" : "";
  if (kind == "rail")
    return out + "rail " + text(ev, "rail") + " " + text(ev, "state") + why + "\n";
  if (kind == "failover") {
    return out + (reason == "failback" ? "failback" : "failover") + " peer " + peer + " rail " +
           text(ev, "from_rail") + " -> " + text(ev, "rail") + why + "\n";
  }
  // A connection's event names its rail unless it is rail 0, so that a
  // one-rail node's lines read as they always did.
  const auto rail = count(ev, "rail");
  const std::string on_rail = rail && *rail != 0 ? " rail " + std::to_string(*rail) : "";
  if (kind == "reject")
    return out + "peer " + peer + on_rail + " REJ " + reason + " (" + text(ev, "detail") + ")\n";
  const auto qpn = count(ev, "qpn");
  out += qpn && *qpn != 0 ? "QPN " + text(ev, "qpn") : "conn " + text(ev, "conn");
  out += " peer " + peer + on_rail + " ";
  if (kind == "state")
    return out + text(ev, "from") + " -> " + text(ev, "to") + " (" + reason + ")\n";
  if (kind == "teardown") {
    return out + "teardown from " + text(ev, "to") + ": " + reason +
           (cause != "-" ? " [" + cause + "]" : "") + "\n";
  }
  if (kind == "evict")
    return out + "EVICTED (" + reason + ")\n";
  return out + kind + " (" + reason + ")\n";
}

std::string render_end(const std::string& message) {
  return "monitor ended: " +
         (message.empty() ? std::string("rcnetd closed the connection") : message) + "\n";
}

}  // namespace rcnet::ctl
