// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The Prometheus export against rcnetctl(8) METRICS: every metric family
// rcnetctl writes for a daemon's whole "stats" (the manager's, the rails',
// the TUN side's and the ctl server's counters, the histograms) and
// "status" is documented there, and the section names no metric that is not
// written. Here rather than in tests/unit/rcnetctl: the daemon's counter
// tables (TunCounters, CtlCounters) live in daemon/.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include "catch2_compat.hpp"

#include "full_export.hpp"

namespace daemon_metrics_docs_test {
using namespace rcnet;

TEST_CASE("rcnetctl(8) METRICS documents exactly the metric families rcnetctl writes",
          "[ops][docs]") {
  const std::string text = daemon::test::full_prometheus_export();

  std::set<std::string> written;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0)
      written.insert(line.substr(7, line.find(' ', 7) - 7));
  }

  std::ifstream f(RCNETCTL_MAN);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string man = ss.str();
  const auto a = man.find("\n# METRICS\n");
  REQUIRE(a != std::string::npos);
  const std::string section = man.substr(a, man.find("\n# ", a + 1) - a);
  // scdoc escapes '_' inside _..._ as "\_".
  const std::string plain = std::regex_replace(section, std::regex(R"(\\_)"), "_");
  std::set<std::string> documented;
  const std::regex name(R"(rcnet_[a-z_]+[a-z])");
  for (auto it = std::sregex_iterator(plain.begin(), plain.end(), name);
       it != std::sregex_iterator(); ++it)
    documented.insert(it->str());

  for (const std::string& m : written) {
    INFO(m << " is written but not in rcnetctl(8) METRICS");
    CHECK(documented.count(m) == 1);
  }
  for (const std::string& m : documented) {
    if (m == "rcnet_WHAT_UNIT_total")
      continue;
    INFO(m << " is in rcnetctl(8) METRICS but not written");
    CHECK(written.count(m) == 1);
  }
  CHECK(written.size() > 60);
}

}  // namespace daemon_metrics_docs_test
