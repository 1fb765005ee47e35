// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl's documents against the command tables (lib/ctl/commands.hpp,
// and rcnetctl's own commands in tools/rcnetctl/cli.hpp) and
// the log level table (lib/config/log_level.hpp): the bash completion and
// rcnetctl(8) name every command, nothing else, in the table's order, and
// spell its arguments, who may run it and the level names as the tables do.
// tests/unit/rcnetctl/meson.build passes the two files' paths.
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "cli.hpp"
#include "config/log_level.hpp"
#include "ctl/commands.hpp"
#include "test_helpers.hpp"

namespace rcnetctl_docs_test {
using namespace rcnet;
using rcnet::unit::words;

namespace {

std::string slurp(const char* path) {
  std::ifstream f(path);
  INFO(path);
  REQUIRE(f.good());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Words joined by one space: also how a failed CHECK shows a list.
std::string join(const std::vector<std::string>& ws) {
  std::string out;
  for (const std::string& w : ws)
    out += (out.empty() ? "" : " ") + w;
  return out;
}

// Runs of blanks, tabs and newlines as one space.
std::string squeeze(const std::string& s) {
  return join(words(s));
}

// The ctl commands (all or the read-only ones), then, unless
// `read_only_only`, rcnetctl's own (kLocalCommands).
std::vector<std::string> table_names(bool read_only_only = false) {
  std::vector<std::string> out;
  for (const ctl::CommandInfo& row : ctl::kCommands) {
    if (!read_only_only || row.effect == ctl::Effect::kReadOnly)
      out.emplace_back(row.name);
  }
  if (!read_only_only) {
    for (const rcnetctl::LocalCommand& row : rcnetctl::kLocalCommands)
      out.emplace_back(row.name);
  }
  return out;
}

std::vector<std::string> level_names() {
  std::vector<std::string> out;
  for (const config::LogLevelName& l : config::kLogLevels)
    out.emplace_back(l.name);
  return out;
}

// The words of the first `compgen -W "..."` on a line matching `line_re`,
// and on the line after it (a `case` label on a line of its own).
std::vector<std::string> compgen_words(const std::string& text, const std::string& line_re) {
  const std::regex label(line_re);
  const std::regex compgen(R"re(compgen -W "([^"]*)")re");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!std::regex_search(line, label))
      continue;
    std::smatch m;
    if (std::regex_search(line, m, compgen))
      return words(m[1]);
    if (std::getline(in, line) && std::regex_search(line, m, compgen))
      return words(m[1]);
  }
  return {};
}

struct ManEntry {
  std::string head;  // the line "*name* ARGS"
  std::string body;  // its indented paragraph, squeezed
};

// The "# COMMANDS" section: one entry per line that starts with "*".
std::vector<std::pair<std::string, ManEntry>> man_commands(const std::string& man) {
  const auto start = man.find("\n# COMMANDS\n");
  REQUIRE(start != std::string::npos);
  const auto end = man.find("\n# ", start + 1);
  std::istringstream in(man.substr(start + 1, end - start - 1));
  std::vector<std::pair<std::string, ManEntry>> out;
  const std::regex head(R"(^\*([a-z-]+)\*)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, head)) {
      out.push_back({m[1], {line, ""}});
    } else if (!out.empty() && !line.empty() && line[0] == '\t') {
      out.back().second.body += " " + line;
    }
  }
  for (auto& [name, e] : out)
    e.body = squeeze(e.body);
  return out;
}

}  // namespace

TEST_CASE("bash completion offers exactly the table's commands and level names",
          "[rcnetctl][docs]") {
  const std::string comp = slurp(RCNETCTL_COMPLETION);
  std::smatch m;
  REQUIRE(std::regex_search(comp, m, std::regex(R"re(local cmds="([^"]*)")re")));
  CHECK(join(words(m[1])) == join(table_names()));

  CHECK(join(compgen_words(comp, R"(^\s*log-level\)\s*$)")) == join(level_names()));

  // Every option of a command's arguments is offered after that command.
  for (const ctl::CommandInfo& row : ctl::kCommands) {
    for (const ctl::Arg& a : row.args) {
      if (!a.cli.starts_with("--"))
        continue;
      INFO(row.name << " " << a.cli);
      const auto offered = compgen_words(comp, "^\\s*" + std::string(row.name) + "\\)");
      CHECK(std::find(offered.begin(), offered.end(), std::string(a.cli)) != offered.end());
    }
  }
}

TEST_CASE("rcnetctl(8) documents exactly the table's commands, as the table has them",
          "[rcnetctl][docs]") {
  const std::string man = slurp(RCNETCTL_MAN);
  const auto entries = man_commands(man);
  std::vector<std::string> names;
  for (const auto& [name, e] : entries)
    names.push_back(name);
  CHECK(join(names) == join(table_names()));

  for (const auto& [name, e] : entries) {
    const auto c = ctl::parse_command(name);
    if (!c)
      continue;  // reported above
    const ctl::CommandInfo& row = ctl::info(*c);
    INFO(e.head);
    // Its arguments as rcnetctl spells them: _PEER_, *--idle*.
    for (const ctl::Arg& a : row.args) {
      const std::string spelled =
          a.cli.starts_with("--") ? "*" + std::string(a.cli) + "*" : "_" + std::string(a.cli) + "_";
      CHECK_THAT(e.head, Catch::Contains(spelled));
    }
    // Who may run it.
    CHECK((e.body.find("Root only.") != std::string::npos) ==
          (row.effect == ctl::Effect::kMutating));
  }

  // ACCESS lists the read-only commands, in the table's order.
  std::smatch m;
  REQUIRE(std::regex_search(man, m, std::regex(R"(the read-only ones \(([^)]*)\))")));
  const std::string listed = m[1];
  CHECK(join(words(std::regex_replace(listed, std::regex(","), " "))) ==
        join(table_names(/*read_only_only=*/true)));

  // log-level lists the level names.
  bool found = false;
  for (const auto& [name, e] : entries) {
    if (name == ctl::to_string(ctl::Command::kLogLevel)) {
      found = true;
      CHECK_THAT(e.body, Catch::Contains("(" + config::log_level_list() + ")"));
    }
  }
  CHECK(found);
}

}  // namespace rcnetctl_docs_test
