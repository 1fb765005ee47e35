// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The key table (lib/config/keys.hpp) against what documents it: one row
// per key, rcnetd.toml(5), rcnetd(8) and the shipped example, and the
// values as the file writes them.
#include "catch2_compat.hpp"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "config/example_toml.hpp"
#include "config/key_docs.hpp"
#include "config/keys.hpp"
#include "config_texts.hpp"

namespace config_key_table_test {
using namespace rcnet;
using namespace rcnet::config;
using namespace rcnet::config::test;

namespace {

// What man/rcnetd.toml.5.scd documents: each "*key* = _SYNTAX_ ..." entry
// under a "# [section]" heading (or "*[[peers.static]]*"), whether it is
// marked "(live)" or its section says "All live", and its syntax token.
struct ManEntry {
  bool live = false;
  std::string syntax;  // "_1..65535_" or "" when the entry has none
};

std::map<std::string, ManEntry> man_entries(const std::string& text) {
  std::map<std::string, ManEntry> out;
  std::istringstream in(text);
  std::string line, section;
  bool section_live = false;
  while (std::getline(in, line)) {
    if (line.rfind("# [", 0) == 0 && line.back() == ']') {
      section = line.substr(3, line.size() - 4);
      section_live = false;
    } else if (line.rfind("# ", 0) == 0) {
      section.clear();  // EXAMPLE, SEE ALSO, ...
    } else if (!section.empty() && line.rfind("All live", 0) == 0) {
      section_live = true;
    } else if (!section.empty() && line.size() > 2 && line[0] == '*') {
      const std::size_t end = line.find('*', 1);
      REQUIRE(end != std::string::npos);
      std::string name = line.substr(1, end - 1);
      std::string dotted;
      if (name.rfind("[[", 0) == 0) {
        dotted = name.substr(2, name.size() - 4);
      } else {
        dotted = section + "." + name;
      }
      ManEntry e;
      e.live = section_live || line.find("(live)") != std::string::npos;
      const std::size_t eq = line.find(" = _", end);
      if (eq != std::string::npos)
        e.syntax = line.substr(eq + 3, line.find('_', eq + 4) - eq - 2);
      INFO(line);
      CHECK(out.emplace(dotted, e).second);  // documented once
    }
  }
  return out;
}

// The example with its commented-out keys set: "#key = value" lines (no
// space after the "#", unlike prose) lose their "#".
std::string uncommented(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.size() > 1 && line[0] == '#' && std::islower(static_cast<unsigned char>(line[1])))
      line = line.substr(1);
    out += line + "\n";
  }
  return out;
}

// The keys rcnetd.example.toml writes, "[[peers.static]]" and "#key = "
// lines included even when commented out (shown, not set, in the example).
std::set<std::string> example_keys(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(uncommented(text));
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("# [[", 0) == 0)
      line = line.substr(2);
    if (line.rfind("[[", 0) == 0) {
      section = line.substr(2, line.find("]]") - 2);
      out.insert(section);
    } else if (line.rfind('[', 0) == 0) {
      section = line.substr(1, line.find(']') - 1);
    } else if (!line.empty() && line[0] != '#' && line.find(" = ") != std::string::npos) {
      out.insert(section + "." + line.substr(0, line.find(" = ")));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("config: the key table has one row per key, each in its section", "[config]") {
  std::set<std::string> seen;
  std::vector<std::string> sections;
  for (const Key& k : keys()) {
    INFO(k.dotted);
    CHECK(seen.emplace(k.dotted).second);
    CHECK(find_key(k.dotted) == &k);
    CHECK_FALSE(k.section().empty());
    CHECK_FALSE(k.name().empty());
    CHECK(k.dotted == std::string(k.section()) + "." + std::string(k.name()));
    CHECK_FALSE(k.help.empty());
    CHECK(k.min <= k.max);
    CHECK((k.copy != nullptr) == (k.apply == Apply::kLive));  // what config::reload() copies
    // A section's rows are contiguous, so errors come in file order.
    if (sections.empty() || sections.back() != k.section()) {
      CHECK(std::find(sections.begin(), sections.end(), k.section()) == sections.end());
      sections.emplace_back(k.section());
    }
  }
  CHECK(find_key("timeouts.idle_ms") == nullptr);
  CHECK(find_key("timeouts") == nullptr);
}

TEST_CASE("config: every row is documented in rcnetd.toml(5), with its range and reload",
          "[config]") {
  const auto man = man_entries(kManRcnetdToml);
  std::set<std::string> documented;
  for (const auto& [k, e] : man)
    documented.insert(k);
  CHECK(documented == table_keys());
  for (const Key& k : keys()) {
    INFO(k.dotted);
    const auto it = man.find(std::string(k.dotted));
    if (it == man.end())
      continue;
    CHECK(it->second.live == (k.apply == Apply::kLive));
    if (k.max != 0)  // an integer: the man page shows its range
      CHECK(it->second.syntax == "_" + std::to_string(k.min) + ".." + std::to_string(k.max) + "_");
  }
}

// The keys rcnetd(8)'s SIGHUP entry says a reload applies: each "*key*" of
// the paragraph, "*section.\\**" standing for every key of the section.
static std::set<std::string> sighup_keys(const std::string& text) {
  const std::size_t start = text.find("*SIGHUP*");
  REQUIRE(start != std::string::npos);
  const std::string para = text.substr(start + 8, text.find("\n\n", start) - start - 8);
  std::set<std::string> out;
  for (std::size_t b = para.find('*'); b != std::string::npos; b = para.find('*', b)) {
    std::size_t e = para.find('*', b + 1);
    REQUIRE(e != std::string::npos);
    if (para[e - 1] == '\\')  // "*timeouts.\\**": the glob's star
      e = para.find('*', e + 1);
    REQUIRE(e != std::string::npos);
    std::string name = para.substr(b + 1, e - b - 1);
    b = e + 1;
    if (name.ends_with(".\\*")) {
      const std::string section = name.substr(0, name.size() - 2);
      for (const Key& k : keys())
        if (k.dotted.starts_with(section))
          out.emplace(k.dotted);
    } else if (name.find('.') != std::string::npos) {
      out.insert(name);
    }
  }
  return out;
}

TEST_CASE("config: rcnetd(8) names exactly the live rows under SIGHUP", "[config]") {
  std::set<std::string> live;
  for (const Key& k : keys())
    if (k.apply == Apply::kLive)
      live.emplace(k.dotted);
  CHECK(sighup_keys(kManRcnetd) == live);
}

// "a, b, ..., y or z" of `names`.
template <class Names>
static std::string prose_list(const Names& names) {
  std::string out;
  for (std::size_t i = 0; i < std::size(names); ++i)
    out += std::string(i == 0                      ? ""
                       : i + 1 == std::size(names) ? " or "
                                                   : ", ") +
           std::string(names[i]);
  return out;
}

TEST_CASE("config: the man pages and the example spell the log levels and targets of the tables",
          "[config]") {
  const std::string levels = prose_list(log_level_names());
  // rcnetd(8) --log-level and --log-target.
  CHECK(std::string(kManRcnetd).find("\t" + levels + ". Overrides *log.level*") !=
        std::string::npos);
  CHECK(std::string(kManRcnetd).find("\t" + prose_list(kLogTargets) + ". Overrides *log.target*") !=
        std::string::npos);
  // rcnetd.toml(5) and the example: "trace, debug, info (default), ..., off".
  std::string listed = log_level_list();
  const std::string toml_man = kManRcnetdToml;
  std::string with_default = listed;
  with_default.replace(with_default.find("info"), 4, "info (default)");
  CHECK(toml_man.find("\t" + with_default + ".") != std::string::npos);
  CHECK(std::string(kExampleToml).find("# " + listed + ".") != std::string::npos);
  std::string targets = "_";
  for (std::size_t i = 0; i < kLogTargets.size(); ++i)
    targets += std::string(i == 0 ? "" : "|") + std::string(kLogTargets[i]);
  CHECK(toml_man.find("*target* = " + targets + "_") != std::string::npos);
}

TEST_CASE("config: the example file sets every row, to its default", "[config]") {
  CHECK(example_keys(kExampleToml) == table_keys());
  const Config ex = parse_ok(example_set());
  for (const Key& k : keys()) {
    INFO(k.dotted);
    // Required keys have no default; the example shows the prefix rule.
    if (k.required || k.dotted == "peers.underlay_prefix")
      continue;
    CHECK(k.get(ex) == k.default_value());
  }
}

TEST_CASE("config: defaults and values as the file writes them", "[config]") {
  CHECK(find_key("node.address")->default_value() == Value());
  CHECK(find_key("tun.address")->default_value() == Value());
  CHECK(find_key("node.port")->default_value() == Value(std::int64_t{kDefaultPort}));
  CHECK(find_key("tun.name")->default_value() == Value(std::string("rc0")));
  CHECK(find_key("srq.enabled")->default_value() == Value(true));
  CHECK(find_key("timeouts.idle")->default_value() == Value(std::string("5m")));
  CHECK(find_key("peers.underlay_prefix")->default_value() == Value());
  CHECK(find_key("peers.allowed")->default_value() == Value(std::vector<std::string>{}));
  CHECK(find_key("log.level")->default_value() == Value(std::string("info")));
  CHECK(find_key("transport.ack_timeout")->default_value() == Value(std::int64_t{14}));
  CHECK(find_key("transport.rnr_timer")->default_value() == Value(std::int64_t{12}));

  const Config c = parse_ok(kFull);
  CHECK(find_key("node.address")->get(c) == Value(std::string("10.99.0.1")));
  CHECK(find_key("tun.address")->get(c) == Value(std::string("10.100.0.1/24")));
  CHECK(find_key("tun.mtu")->get(c) == Value(std::int64_t{9000}));
  CHECK(find_key("srq.enabled")->get(c) == Value(false));
  CHECK(find_key("timeouts.last_wqe")->get(c) == Value(std::string("250ms")));
  CHECK(find_key("timeouts.disconnect")->get(c) == Value(std::string("1500ms")));
  CHECK(find_key("timeouts.connect")->get(c) == Value(std::string("1m")));
  CHECK(find_key("peers.allowed")->get(c) ==
        Value(std::vector<std::string>{"10.99.0.0/24", "10.98.0.0/16"}));
  CHECK(find_key("peers.static")->get(c) ==
        Value(std::vector<InlineTable>{{{"overlay", "10.100.0.7"}, {"underlay", "10.99.1.7"}},
                                       {{"overlay", "10.100.0.8"}, {"underlay", "10.99.1.8"}}}));
  CHECK(find_key("log.target")->get(c) == Value(std::string("journal")));
}

TEST_CASE("config: format_duration writes the largest exact unit, and parse reads it back",
          "[config]") {
  CHECK(format_duration(1h) == "1h");
  CHECK(format_duration(120s) == "2m");
  CHECK(format_duration(90s) == "90s");
  CHECK(format_duration(1s) == "1s");
  CHECK(format_duration(1500ms) == "1500ms");
  CHECK(format_duration(1ms) == "1ms");
  CHECK(format_duration(std::chrono::microseconds(1000500)) == "1.0005s");
  CHECK(format_duration(std::chrono::microseconds(1500)) == "0.0015s");
  CHECK(format_duration(Duration(0)) == "0s");
  for (Duration d : {Duration(1ms), Duration(999ms), Duration(1500ms), Duration(61s),
                     Duration(3600s), Duration(24h), Duration(90min)}) {
    const Config c = parse_ok(with("[timeouts]\nconnect = \"" + format_duration(d) + "\""));
    INFO(format_duration(d));
    CHECK(c.manager.connect_timeout == d);
  }
}

}  // namespace config_key_table_test
