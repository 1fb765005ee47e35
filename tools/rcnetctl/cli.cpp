// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cli.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

// GCC 12 reports a null dereference inside CLI11's own string helpers
// (CLI::detail::split) once inlined here: a false positive in the library.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "ctl/protocol.hpp"
#include "ctl/render.hpp"
#include "fd.hpp"
#include "rcnet_build_config.h"

namespace rcnet::rcnetctl {

namespace {

// The unit that owns `socket`: rcnetd@NAME for /run/rcnet/NAME.sock (the
// instances' --ctl-socket), rcnetd for the default; empty for another path.
std::string unit_of(const std::string& socket) {
  if (socket == kDefaultSocket)
    return "rcnetd";
  constexpr std::string_view dir = "/run/rcnet/", ext = ".sock";
  std::string_view s = socket;
  if (!s.starts_with(dir) || !s.ends_with(ext) || s.size() <= dir.size() + ext.size())
    return "";
  const std::string_view name = s.substr(dir.size(), s.size() - dir.size() - ext.size());
  if (name.find('/') != std::string_view::npos)
    return "";
  return "rcnetd@" + std::string(name);
}

// One failure to talk to the daemon, told the way every command tells it.
int report_transport_error(const Error& e, const std::string& socket, std::ostream& err) {
  err << "rcnetctl: " << e.message() << "\n";
  const int code = e.code.value();
  if (e.code.category() == std::generic_category() && (code == ENOENT || code == ECONNREFUSED)) {
    const std::string unit = unit_of(socket);
    if (unit.empty())
      err << "rcnetctl: is an rcnetd with ctl.socket " << socket << " running?\n";
    else
      err << "rcnetctl: is rcnetd running? Try: systemctl status " << unit << "\n";
    return kExitNotRunning;
  }
  if (e.code.category() == std::generic_category() && code == EACCES)
    err << "rcnetctl: " << socket << " is for root and the ctl group (ctl.group)\n";
  return kExitFailed;
}

// rcnetctl monitor: the reply, then one line per event until the end line,
// the daemon's close, or Ctrl-C (all exit 0).
int run_monitor(const ctl::Request& req, const std::string& socket, bool as_json,
                const StreamTransport& stream, std::ostream& out, std::ostream& err) {
  if (!stream) {
    err << "rcnetctl: monitor: no stream transport\n";
    return kExitFailed;
  }
  bool replied = false, ended = false;
  int rc = kExitOk;
  auto on_line = [&](std::string_view line) -> bool {
    if (!replied) {
      replied = true;
      auto reply = ctl::parse_reply(line);
      if (!reply) {
        err << "rcnetctl: not a reply of rcnetd's ctl protocol: " << reply.error().context << "\n";
        rc = kExitFailed;
        return false;
      }
      if (!reply->ok) {
        err << "rcnetctl: monitor: " << reply->message << " (" << ctl::to_string(reply->code)
            << ")\n";
        rc = kExitFailed;
        return false;
      }
      return true;
    }
    auto push = ctl::parse_push(line);
    if (!push) {
      // A line this rcnetctl does not understand: say so, keep watching.
      err << "rcnetctl: monitor: " << push.error().context << "\n";
      return true;
    }
    if (as_json) {
      out << line << "\n";
    } else if (push->end) {
      out << ctl::render_end(push->end_message);
    } else {
      out << ctl::render_event(push->event);
    }
    out.flush();  // one line at a time, also into a pipe
    if (push->end) {
      ended = true;
      return false;
    }
    return true;
  };
  auto r = stream(socket, ctl::encode_request(req), on_line);
  if (!r) {
    const Error& e = r.error();
    if (e.code.category() == std::generic_category() && e.code.value() == EINTR)
      return kExitOk;  // Ctrl-C
    return report_transport_error(e, socket, err);
  }
  if (rc == kExitOk && !ended) {
    const std::string msg = ctl::render_end("");
    (as_json ? err : out) << msg;
    out.flush();
  }
  return rc;
}

// Writes `text` to a temporary file next to `path`, then rename(2)s it over
// `path`: a reader (node-exporter's textfile collector) sees the old file or
// the new one, never half of one. Errors: mkstemp/write/rename's errno.
Result<void> write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".XXXXXX";
  Fd f{::mkstemp(tmp.data())};
  if (f.fd < 0)
    return Error::from_errno(errno, "mkstemp " + tmp);
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(f.fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      return Error::from_errno(e, "write " + tmp);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fchmod(f.fd, 0644) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Error::from_errno(e, "rename to " + path);
  }
  return {};
}

// `stats NAME...`: the named counters of a stats reply (rcnetd's "counters":
// [{name, value, help}]), each value on its own line in the order asked, or
// with -j one JSON object {name: value}. A name rcnetd has no counter of is a
// usage error that prints nothing else (a script must not read a value off
// the wrong line).
int print_counters(const ctl::json& data, const std::vector<std::string>& names, bool as_json,
                   std::ostream& out, std::ostream& err) {
  std::map<std::string, ctl::json> by_name;
  if (auto it = data.find("counters"); it != data.end() && it->is_array())
    for (const ctl::json& c : *it)
      if (c.is_object() && c.contains("name") && c["name"].is_string() && c.contains("value"))
        by_name[c["name"].get<std::string>()] = c["value"];
  for (const std::string& n : names) {
    if (!by_name.contains(n)) {
      err << "rcnetctl: stats: rcnetd has no counter '" << n << "' (rcnetctl stats lists them)\n";
      return kExitUsage;
    }
  }
  if (as_json) {
    ctl::json o = ctl::json::object();
    for (const std::string& n : names)
      o[n] = by_name[n];
    out << o.dump() << "\n";
    return kExitOk;
  }
  for (const std::string& n : names)
    out << by_name[n].dump() << "\n";
  return kExitOk;
}

// "12345" or "0x..." → node id; an address → underlay or overlay address
// (the daemon tells them apart). Otherwise the message for a usage error.
std::optional<std::string> parse_peer(const std::string& text, ctl::Request& r) {
  if (auto a = IpAddr::parse(text)) {
    r.peer_addr = *a;
    return std::nullopt;
  }
  std::uint64_t v = 0;
  int base = 10;
  std::string_view s = text;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (!s.empty() && p == s.data() + s.size()) {
    if (ec == std::errc::result_out_of_range)
      return "'" + text + "' is too large for a node id (at most 18446744073709551615, 0x" +
             "ffffffffffffffff)";
    if (ec == std::errc() && v == 0)
      return "node id 0 is never valid";
    if (ec == std::errc()) {
      r.peer_node = v;
      return std::nullopt;
    }
  }
  return "'" + text +
         "' is neither a node id (a number from 1, decimal or 0x hexadecimal) nor an IP address";
}

// Seconds as --idle takes them: a plain decimal number from 0 to 1e6.
std::optional<double> parse_seconds(const std::string& text) {
  if (text.empty() || text.size() > 32)
    return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0 || v > 1e6)
    return std::nullopt;
  return v;
}

// Edit distance (insertions, deletions, substitutions), for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Every command's name: the ctl commands' (ctl::kCommands), then rcnetctl's
// own (kLocalCommands), in the tables' order.
std::vector<std::string_view> all_command_names() {
  std::vector<std::string_view> out;
  for (const ctl::CommandInfo& row : ctl::kCommands)
    out.push_back(row.name);
  for (const LocalCommand& row : kLocalCommands)
    out.push_back(row.name);
  return out;
}

bool is_local_command(std::string_view word) {
  return std::any_of(std::begin(kLocalCommands), std::end(kLocalCommands),
                     [word](const LocalCommand& row) { return row.name == word; });
}

// The commands `word` may have meant: those it begins (in the table's
// order), then those within two edits of it (nearest first).
std::vector<std::string_view> nearest_commands(std::string_view word) {
  std::vector<std::string_view> out;
  const std::vector<std::string_view> names = all_command_names();
  for (const std::string_view name : names) {
    if (!word.empty() && name.starts_with(word))
      out.push_back(name);
  }
  std::vector<std::pair<std::size_t, std::string_view>> near;
  for (const std::string_view name : names) {
    const std::size_t d = distance(word, name);
    if (d <= 2 && d < name.size() && std::find(out.begin(), out.end(), name) == out.end())
      near.emplace_back(d, name);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [d, name] : near)
    out.push_back(name);
  return out;
}

// The first word of `args` that is no option nor an option's value: what
// the user meant as the command. Only -s/--socket and doctor's -c/--config
// take a value before it.
std::optional<std::string> command_word(std::span<const std::string> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--")
      return i + 1 < args.size() ? std::optional(args[i + 1]) : std::nullopt;
    if (a == "-s" || a == "--socket" || a == "-c" || a == "--config") {
      ++i;
      continue;
    }
    if (a.starts_with("-"))
      continue;
    return a;
  }
  return std::nullopt;
}

std::string command_list() {
  std::string out;
  for (const std::string_view name : all_command_names())
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// A Unix socket path fits sockaddr_un::sun_path with its NUL.
std::optional<std::string> socket_path_problem(const std::string& socket) {
  if (socket.empty())
    return "the socket path is empty";
  constexpr std::size_t max = sizeof(sockaddr_un::sun_path) - 1;
  if (socket.size() > max)
    return "the socket path has " + std::to_string(socket.size()) +
           " bytes; a Unix socket path has at most " + std::to_string(max);
  return std::nullopt;
}

}  // namespace

int run(std::span<const std::string> args, const Transport& transport, std::ostream& out,
        std::ostream& err, const StreamTransport& stream, const doctor::Host* doctor_host) {
  CLI::App app{"rcnetctl: inspect and control rcnetd", "rcnetctl"};
  app.require_subcommand(1, 1);
  // -j, -p and -s also after the command: "rcnetctl status -j".
  app.fallthrough();
  app.set_version_flag("-V,--version", "rcnetctl " RCNET_VERSION, "print rcnetctl's version");
  bool as_json = false, pretty = false;
  std::string socket = kDefaultSocket;
  app.add_flag("-j,--json", as_json, "print the reply's data as JSON");
  app.add_flag("-p,--pretty", pretty, "with -j: indent the JSON");
  app.add_option("-s,--socket", socket, "rcnetd's ctl socket")->capture_default_str();

  // One subcommand per row of ctl::kCommands, one option or positional per
  // row's arg; the values are read per ArgKind once the line is parsed.
  struct ArgValue {
    CLI::Option* opt = nullptr;
    std::string text;  // every kind, checked once the line is parsed
  };
  struct Sub {
    const ctl::CommandInfo* row;
    CLI::App* app;
  };
  std::vector<Sub> subs;
  std::map<const ctl::Arg*, ArgValue> values;  // node-based: CLI11 keeps pointers into it
  for (const ctl::CommandInfo& row : ctl::kCommands) {
    std::string help(row.help);
    if (row.effect == ctl::Effect::kMutating)
      help += "; root only";
    CLI::App* sub = app.add_subcommand(std::string(row.name), help);
    subs.push_back({&row, sub});
    // "route get ADDR": the args belong to the verb's own subcommand.
    CLI::App* holder = sub;
    if (!row.verb.empty()) {
      sub->require_subcommand(1, 1);
      holder = sub->add_subcommand(std::string(row.verb), help);
    }
    for (const ctl::Arg& a : row.args) {
      ArgValue& v = values[&a];
      const std::string name(a.cli);
      std::string arg_help(a.help);
      if (a.kind == ctl::ArgKind::kLogLevel)
        arg_help += config::log_level_list();
      v.opt = holder->add_option(name, v.text, arg_help);
      if (a.required)
        v.opt->required();
    }
  }
  // rcnetctl's own options of "stats": how to print, not what to ask.
  std::string stats_format = "table";
  std::string output_path;
  std::vector<std::string> stats_names;
  {
    CLI::App* stats = subs[static_cast<std::size_t>(ctl::Command::kStats)].app;
    stats
        ->add_option("--format", stats_format,
                     "table (default), or prometheus: the text exposition format, with gauges "
                     "from status (for node-exporter's textfile collector)")
        ->check(CLI::IsMember({"table", "prometheus"}));
    stats->add_option("--output", output_path,
                      "with --format prometheus: write FILE atomically (a temporary file, then "
                      "rename(2)) instead of stdout; rcnet_up 0 when rcnetd does not answer");
    stats->add_option("NAME", stats_names,
                      "only these counters' values, one per line in this order (with -j: one "
                      "JSON object of name: value)");
  }

  // rcnetctl's own commands (kLocalCommands): doctor reads the config
  // rcnetd would read, never the socket.
  std::string doctor_config = "/etc/rcnet/rcnetd.toml";
  CLI::App* doctor_app =
      app.add_subcommand(std::string(kLocalCommands[0].name), std::string(kLocalCommands[0].help));
  doctor_app->add_option("-c,--config", doctor_config, "rcnetd's configuration file")
      ->capture_default_str();

  // An unknown command names itself and what it may have meant, before
  // CLI11 says something vaguer ("A subcommand is required").
  if (auto word = command_word(args);
      word && !ctl::parse_command(*word) && !is_local_command(*word)) {
    err << "rcnetctl: unknown command '" << *word << "'";
    const auto near = nearest_commands(*word);
    for (std::size_t i = 0; i < near.size() && i < 3; ++i)
      err << (i == 0                                           ? "; did you mean "
              : i + 1 == std::min<std::size_t>(near.size(), 3) ? " or "
                                                               : ", ")
          << near[i];
    err << (near.empty() ? "" : "?") << "\nrcnetctl: the commands are " << command_list() << "\n";
    return kExitUsage;
  }

  std::vector<std::string> argv_s;
  argv_s.emplace_back("rcnetctl");
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_name() == "RequiredError" && app.get_subcommands().empty()) {
      err << "rcnetctl: no command given; the commands are " << command_list()
          << " (rcnetctl --help)\n";
      return kExitUsage;
    }
    // "route 10.0.0.1": the verb is missing; say the whole usage.
    for (const Sub& sb : subs) {
      if (sb.app->parsed() && !sb.row->verb.empty() && sb.app->get_subcommands().empty()) {
        err << "rcnetctl: " << sb.row->name << ": usage: rcnetctl " << sb.row->name << " "
            << sb.row->verb;
        for (const ctl::Arg& a : sb.row->args)
          err << " " << a.cli;
        err << "\n";
        return kExitUsage;
      }
    }
    const int rc = app.exit(e, out, err);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (auto why = socket_path_problem(socket)) {
    err << "rcnetctl: -s: " << *why << "\n";
    return kExitUsage;
  }
  if (doctor_app->parsed()) {
    if (doctor_host != nullptr)
      return doctor::run(doctor_config, as_json, pretty, *doctor_host, out, err);
    const doctor::Host host = doctor::system_host();
    return doctor::run(doctor_config, as_json, pretty, host, out, err);
  }

  const ctl::CommandInfo* row = &ctl::kCommands[0];
  for (const Sub& s : subs) {
    if (s.app->parsed())
      row = s.row;
  }
  ctl::Request req;
  req.cmd = row->cmd;
  for (const ctl::Arg& a : row->args) {
    const ArgValue& v = values.at(&a);
    if (v.opt->count() == 0)
      continue;
    const std::string prefix = "rcnetctl: " + std::string(row->name) + ": ";
    switch (a.kind) {
      case ctl::ArgKind::kPeer:
        if (auto why = parse_peer(v.text, req)) {
          err << prefix << *why << "\n";
          return kExitUsage;
        }
        break;
      case ctl::ArgKind::kSeconds:
        if (auto secs = parse_seconds(v.text)) {
          req.reap_idle =
              std::chrono::duration_cast<Duration>(std::chrono::duration<double>(*secs));
        } else {
          err << prefix << a.cli << " takes a number of seconds from 0 to 1000000 (fractions "
              << "allowed, e.g. 2.5), not '" << v.text << "'\n";
          return kExitUsage;
        }
        break;
      case ctl::ArgKind::kLogLevel:
        if (auto l = config::parse_log_level(v.text)) {
          req.level = *l;
        } else {
          err << prefix << "unknown level '" << v.text << "' (" << config::log_level_list()
              << ")\n";
          return kExitUsage;
        }
        break;
      case ctl::ArgKind::kAddress:
        if (auto addr = IpAddr::parse(v.text)) {
          req.address = *addr;
        } else {
          err << prefix << "'" << v.text << "' is not an IPv4 or IPv6 address\n";
          return kExitUsage;
        }
        break;
    }
  }

  const bool prometheus = req.cmd == ctl::Command::kStats && stats_format == "prometheus";
  if (!output_path.empty() && !prometheus) {
    err << "rcnetctl: --output needs --format prometheus\n";
    return kExitUsage;
  }
  if (prometheus && !stats_names.empty()) {
    err << "rcnetctl: stats NAME prints values, not --format prometheus\n";
    return kExitUsage;
  }
  if (req.cmd == ctl::Command::kMonitor)
    return run_monitor(req, socket, as_json, stream, out, err);
  auto line = transport(socket, ctl::encode_request(req));
  if (!line && !output_path.empty())
    (void)write_atomically(output_path,
                           "# HELP rcnet_up 1 when rcnetd answered\n"
                           "# TYPE rcnet_up gauge\nrcnet_up 0\n");
  if (!line)
    return report_transport_error(line.error(), socket, err);
  auto reply = ctl::parse_reply(*line);
  if (!reply) {
    err << "rcnetctl: not a reply of rcnetd's ctl protocol: " << reply.error().context << "\n";
    return kExitFailed;
  }
  if (!reply->ok) {
    err << "rcnetctl: " << ctl::to_string(req.cmd) << ": " << reply->message << " ("
        << ctl::to_string(reply->code) << ")\n";
    return kExitFailed;
  }
  if (prometheus) {
    // The gauges come from "status": a second request on a new connection.
    ctl::Request st;
    st.cmd = ctl::Command::kStatus;
    auto st_line = transport(socket, ctl::encode_request(st));
    auto st_reply = st_line ? ctl::parse_reply(*st_line) : Result<ctl::Reply>(st_line.error());
    if (!st_reply || !st_reply->ok) {
      err << "rcnetctl: stats --format prometheus: status request failed\n";
      return kExitFailed;
    }
    const std::string text = ctl::render_prometheus(reply->data, st_reply->data);
    if (output_path.empty()) {
      out << text;
      return kExitOk;
    }
    if (auto w = write_atomically(output_path, text); !w) {
      err << "rcnetctl: " << w.error().message() << "\n";
      return kExitFailed;
    }
    return kExitOk;
  }
  if (!stats_names.empty())
    return print_counters(reply->data, stats_names, as_json, out, err);
  if (as_json) {
    out << reply->data.dump(pretty ? 2 : -1, ' ', false, ctl::json::error_handler_t::replace)
        << "\n";
  } else {
    out << ctl::render(req.cmd, reply->data);
  }
  if (req.cmd == ctl::Command::kAudit) {
    auto it = reply->data.find("ok");
    if (it == reply->data.end() || !it->is_boolean() || !it->get<bool>())
      return kExitFailed;
  }
  return kExitOk;
}

}  // namespace rcnet::rcnetctl
