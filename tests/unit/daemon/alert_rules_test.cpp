// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The alerting rules the package ships (prometheus/rcnet-alerts.yml) against
// what rcnetd writes (full_export.hpp, the real render_prometheus):
// - every metric a rule's expr selects is written, with every label it
//   matches on and every label value it names (a renamed counter, reason or
//   state fails here, not silently in production);
// - every input series of the promtool tests (tests/unit/alerts) is a series
//   rcnetd writes, plus the labels a scrape adds, or node-exporter's own;
// - every alert has a promtool case where it fires and one where it does not;
// - rcnet-alerts(7) documents each alert, in the rules' order, with the
//   rule's severity and `for:`.
// The rules file is read line by line (its layout is plain: no anchors, no
// flow mappings in the rules); promtool itself checks its YAML and PromQL.
// tests/unit/daemon/meson.build passes the files' paths.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "full_export.hpp"

namespace daemon_alert_rules_test {
using namespace rcnet;

namespace {

std::string slurp(const char* path) {
  std::ifstream f(path);
  INFO(path);
  REQUIRE(f.good());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using Labels = std::map<std::string, std::string>;

// `a="x",b="y\"z"` (the inside of a selector or a sample's braces) to its
// labels and values, PromQL/exposition escapes undone.
Labels parse_labels(const std::string& s, std::map<std::string, std::string>* ops = nullptr) {
  Labels out;
  const std::regex m(R"re(([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)")re");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), m); it != std::sregex_iterator(); ++it) {
    std::string v;
    const std::string raw = (*it)[3];
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size())
        ++i;
      v += raw[i];
    }
    out[(*it)[1]] = v;
    if (ops != nullptr)
      (*ops)[(*it)[1]] = (*it)[2];
  }
  return out;
}

// The samples of an exposition text, by metric name.
std::multimap<std::string, Labels> samples(const std::string& text) {
  std::multimap<std::string, Labels> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    const auto name_end = line.find_first_of("{ ");
    const std::string name = line.substr(0, name_end);
    Labels l;
    if (line[name_end] == '{')
      l = parse_labels(line.substr(name_end + 1, line.rfind('}') - name_end - 1));
    out.emplace(name, l);
  }
  return out;
}

// node-exporter's own series the rules and tests may use, with their labels
// (the textfile collector: node_textfile_mtime_seconds{file},
// node_textfile_scrape_error).
const std::map<std::string, std::set<std::string>> kNodeExporter = {
    {"node_textfile_mtime_seconds", {"file"}},
    {"node_textfile_scrape_error", {}},
};

// Labels a scrape adds to every series; free in value.
const std::set<std::string> kScrapeLabels = {"instance", "job"};
// Labels whose values depend on the node: any value is one rcnetd writes.
bool node_specific(const std::string& label) {
  return label == "rail" || label == "device";
}

struct Rule {
  std::string alert, expr, for_, severity;
};

// The alerting rules of a rules file: name, expr (a block scalar joined by
// spaces), `for:` ("" without) and labels.severity.
std::vector<Rule> parse_rules(const std::string& text) {
  std::vector<Rule> out;
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  const std::regex alert(R"(^\s*- alert:\s*(\S+)\s*$)");
  const std::regex key(R"(^(\s*)(expr|for|severity):\s*(.*?)\s*$)");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, alert)) {
      out.push_back({m[1], "", "", ""});
      continue;
    }
    if (out.empty() || !std::regex_match(lines[i], m, key))
      continue;
    const std::string indent = m[1], k = m[2];
    std::string v = m[3];
    if (k == "expr" && (v == ">-" || v == ">" || v == "|" || v == "|-")) {
      v.clear();
      while (i + 1 < lines.size() &&
             (lines[i + 1].empty() || lines[i + 1].find_first_not_of(' ') > indent.size())) {
        v += " " + lines[++i];
      }
    }
    if (k == "expr")
      out.back().expr = v;
    else if (k == "for")
      out.back().for_ = v;
    else
      out.back().severity = v;
  }
  return out;
}

// A label matcher's value against the values rcnetd writes for the label:
// `=` names one of them; `=~` of plain alternatives (a|b) names only values
// written, any other regex matches at least one.
bool matcher_holds(const std::string& op, const std::string& value,
                   const std::set<std::string>& written) {
  if (op == "=")
    return written.count(value) == 1;
  if (op != "=~")
    return true;
  if (std::regex_match(value, std::regex("[A-Za-z0-9_]+(\\|[A-Za-z0-9_]+)*"))) {
    std::istringstream alts(value);
    for (std::string a; std::getline(alts, a, '|');) {
      if (written.count(a) == 0)
        return false;
    }
    return true;
  }
  const std::regex re(value);
  for (const std::string& w : written) {
    if (std::regex_match(w, re))
      return true;
  }
  return false;
}

// The path rcnet-metrics.service writes (--output FILE).
std::string metrics_file() {
  const std::string unit = slurp(RCNET_METRICS_UNIT);
  std::smatch m;
  REQUIRE(std::regex_search(unit, m, std::regex(R"(--output (\S+))")));
  return m[1];
}

}  // namespace

TEST_CASE("the alerting rules select only metrics and labels rcnetd writes", "[ops][alerts]") {
  const auto written = samples(daemon::test::full_prometheus_export());
  REQUIRE(written.size() > 60);
  const std::string file = metrics_file();
  const std::vector<Rule> rules = parse_rules(slurp(RCNET_ALERT_RULES));
  REQUIRE(rules.size() >= 15);

  const std::regex selector(R"(\b((?:rcnet|node)_[a-zA-Z0-9_]*)\b(\s*\{([^}]*)\})?)");
  const std::regex grouping(R"(\b(?:by|without)\s*\(([^)]*)\))");
  std::set<std::string> used;
  for (const Rule& r : rules) {
    INFO("alert " << r.alert << ": " << r.expr);
    CHECK(!r.expr.empty());
    std::set<std::string> expr_labels = kScrapeLabels;
    std::size_t selected = 0;
    for (auto it = std::sregex_iterator(r.expr.begin(), r.expr.end(), selector);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      std::map<std::string, std::string> ops;
      const Labels matchers = parse_labels((*it)[3], &ops);
      ++selected;
      used.insert(name);
      // The label values written for `name`, by label; node-exporter's
      // file label holds the metrics file, by name (before 1.7) or path.
      std::map<std::string, std::set<std::string>> values;
      if (const auto ne = kNodeExporter.find(name); ne != kNodeExporter.end()) {
        for (const std::string& l : ne->second)
          values[l] = {};
        if (ne->second.count("file") == 1)
          values["file"] = {file, file.substr(file.rfind('/') + 1)};
      } else {
        const auto [a, b] = written.equal_range(name);
        INFO(name << " is not written by rcnetd (lib/ctl/prometheus.cpp)");
        REQUIRE(a != b);
        for (auto s = a; s != b; ++s) {
          for (const auto& [l, v] : s->second)
            values[l].insert(v);
        }
      }
      for (const auto& [l, v] : values)
        expr_labels.insert(l);
      for (const auto& [l, v] : matchers) {
        INFO(name << "{" << l << ops[l] << "\"" << v << "\"}");
        REQUIRE(values.count(l) == 1);
        if (node_specific(l))
          continue;
        CHECK(matcher_holds(ops[l], v, values[l]));
      }
    }
    CHECK(selected > 0);
    for (auto it = std::sregex_iterator(r.expr.begin(), r.expr.end(), grouping);
         it != std::sregex_iterator(); ++it) {
      std::istringstream ls(std::regex_replace(std::string((*it)[1]), std::regex(","), " "));
      for (std::string l; ls >> l;) {
        INFO("by/without (" << l << ")");
        CHECK(expr_labels.count(l) == 1);
      }
    }
  }
  // The rules read the teardown fallbacks, the rails, the SRQ, the drops,
  // the restarts and the metrics file's age, at least.
  for (const char* m : {"rcnet_up", "rcnet_start_time_seconds", "node_textfile_mtime_seconds",
                        "rcnet_last_wqe_timeouts_total", "rcnet_drain_timeouts_total",
                        "rcnet_forced_destroys_total", "rcnet_rail_up", "rcnet_srq_posted",
                        "rcnet_srq_limit_events_total", "rcnet_dropped_packets_total",
                        "rcnet_qps_created_total", "rcnet_qps_destroyed_total", "rcnet_qps",
                        "rcnet_connect_failures_total", "rcnet_rejs_sent_total"}) {
    INFO(m);
    CHECK(used.count(m) == 1);
  }
}

TEST_CASE("the matcher check refuses what rcnetd does not write", "[ops][alerts]") {
  const std::set<std::string> reasons = {"oversize", "unmapped", "queue_full"};
  CHECK(matcher_holds("=", "oversize", reasons));
  CHECK_FALSE(matcher_holds("=", "too_big", reasons));
  CHECK(matcher_holds("=~", "oversize|unmapped", reasons));
  CHECK_FALSE(matcher_holds("=~", "oversize|mtu", reasons));
  CHECK(matcher_holds("=~", "(.*/)?unmapped", reasons));
  CHECK_FALSE(matcher_holds("=~", "(.*/)?rcnet\\.prom", reasons));
  const auto rules = parse_rules(
      "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: >-\n"
      "          rate(x_total[5m])\n          > 1\n        for: 2m\n"
      "        labels:\n          severity: warning\n      - alert: B\n"
      "        expr: y == 0\n        labels:\n          severity: critical\n");
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].alert == "A");
  CHECK(std::regex_replace(rules[0].expr, std::regex(" +"), " ") == " rate(x_total[5m]) > 1");
  CHECK(rules[0].for_ == "2m");
  CHECK(rules[0].severity == "warning");
  CHECK(rules[1].expr == "y == 0");
  CHECK(rules[1].for_.empty());
  CHECK(rules[1].severity == "critical");
}

TEST_CASE("the promtool tests feed rcnetd's own series and cover every alert", "[ops][alerts]") {
  const auto written = samples(daemon::test::full_prometheus_export());
  const std::vector<Rule> rules = parse_rules(slurp(RCNET_ALERT_RULES));
  const std::string tests = slurp(RCNET_ALERT_TESTS);

  // Each input series: rcnetd writes a sample of that name with exactly these
  // labels (besides the scrape's), and these values but the node's own.
  const std::regex series(R"re(series:\s*'([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^']*)\}')re");
  std::size_t n = 0;
  for (auto it = std::sregex_iterator(tests.begin(), tests.end(), series);
       it != std::sregex_iterator(); ++it, ++n) {
    const std::string name = (*it)[1];
    Labels l = parse_labels((*it)[2]);
    INFO("series " << name << "{" << (*it)[2] << "}");
    CHECK(l.count("instance") == 1);
    for (const std::string& s : kScrapeLabels)
      l.erase(s);
    if (const auto ne = kNodeExporter.find(name); ne != kNodeExporter.end()) {
      std::set<std::string> names;
      for (const auto& [k, v] : l)
        names.insert(k);
      CHECK(names == ne->second);
      continue;
    }
    bool found = false;
    const auto [a, b] = written.equal_range(name);
    for (auto s = a; s != b && !found; ++s) {
      if (s->second.size() != l.size())
        continue;
      bool same = true;
      for (const auto& [k, v] : l) {
        const auto w = s->second.find(k);
        same = same && w != s->second.end() &&
               (node_specific(k) ? (k != "rail" || !v.empty()) : w->second == v);
      }
      found = same;
    }
    CHECK(found);
  }
  CHECK(n >= 2 * rules.size());

  // Every alert: a case that fires (exp_alerts with entries) and one that
  // does not (exp_alerts: []); no case for an alert that is not shipped.
  std::map<std::string, int> fires, quiet;
  std::string current;
  std::istringstream in(tests);
  const std::regex alertname(R"(^\s*alertname:\s*(\S+)\s*$)");
  const std::regex exp(R"(^\s*exp_alerts:\s*(\[\])?\s*$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, alertname))
      current = m[1];
    else if (std::regex_match(line, m, exp))
      ++(m[1].matched ? quiet : fires)[current];
  }
  std::set<std::string> shipped;
  for (const Rule& r : rules) {
    shipped.insert(r.alert);
    INFO("alert " << r.alert);
    CHECK(fires[r.alert] >= 1);
    CHECK(quiet[r.alert] >= 1);
  }
  for (const auto& [a, k] : fires) {
    INFO("a promtool case for " << a << ", which rcnet-alerts.yml does not have");
    CHECK(shipped.count(a) == 1);
  }
  for (const auto& [a, k] : quiet) {
    INFO("a promtool case for " << a << ", which rcnet-alerts.yml does not have");
    CHECK(shipped.count(a) == 1);
  }
}

TEST_CASE("rcnet-alerts(7) documents every alert with its severity and for", "[ops][docs]") {
  const std::vector<Rule> rules = parse_rules(slurp(RCNET_ALERT_RULES));
  const std::string man = slurp(RCNET_ALERTS_MAN);
  const auto a = man.find("\n# ALERTS\n");
  REQUIRE(a != std::string::npos);
  const std::string section = man.substr(a, man.find("\n# ", a + 1) - a);
  // Each entry: "## NAME", a blank line, then "Severity *S*, ..." with
  // "after *FOR*" or "at once".
  std::vector<std::string> names;
  std::map<std::string, std::string> first_line;
  std::istringstream in(section);
  const std::regex head(R"(^## (\S+)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, head)) {
      names.push_back(m[1]);
    } else if (!names.empty() && !line.empty() && first_line.count(names.back()) == 0) {
      first_line[names.back()] = line;
    }
  }
  std::vector<std::string> alerts;
  for (const Rule& r : rules)
    alerts.push_back(r.alert);
  CHECK(names == alerts);
  for (const Rule& r : rules) {
    INFO("alert " << r.alert << ": " << first_line[r.alert]);
    CHECK(first_line[r.alert].rfind("Severity *" + r.severity + "*, ", 0) == 0);
    const std::string when = r.for_.empty() ? "at once" : "after *" + r.for_ + "*";
    CHECK(first_line[r.alert].find(when) != std::string::npos);
  }
}

}  // namespace daemon_alert_rules_test
