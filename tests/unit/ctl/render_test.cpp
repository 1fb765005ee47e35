// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The daemon-side parts of rcnetctl's tables that lib/ctl/render.cpp draws:
// the status "daemon" line and the audit's seam-against-manager lists.
#include <sstream>
#include <string>
#include <vector>
#include "catch2_compat.hpp"

#include "ctl/protocol.hpp"
#include "ctl/render.hpp"
#include "ctl/views.hpp"
#include "test_helpers.hpp"

namespace ctl_render_test {
using namespace rcnet;
using namespace rcnet::ctl;
using rcnet::unit::lines;

namespace {

// What DaemonBackend::daemon_status() sends.
json daemon_object(double uptime_ms, const std::string& netns, bool stopping) {
  return {{"version", "1.2.3"},
          {"pid", 4321},
          {"uptime_ms", uptime_ms},
          {"config_path", "/etc/rcnet/a.toml"},
          {"tun", {{"name", "rc0"}, {"address", "10.100.0.1/24"}, {"netns", netns}}},
          {"stopping", stopping},
          {"log_level", "info"},
          {"status", "1 connections established, 0 QPs in teardown"}};
}

}  // namespace

TEST_CASE("render_status: the daemon line comes first, from the daemon object", "[ops][render]") {
  json st = status_json(cm::Snapshot{});
  const std::string without = render_status(st);
  st["daemon"] = daemon_object(185000, "", false);
  const auto out = lines(render_status(st));
  REQUIRE(out.size() == lines(without).size() + 1);
  CHECK(out[0] == "rcnetd 1.2.3  pid 4321  up 3m05s  tun rc0 10.100.0.1/24  log info");
  // The manager's lines follow unchanged.
  CHECK(render_status(st).substr(out[0].size() + 1) == without);

  st["daemon"] = daemon_object(800, "node1", true);
  const auto stopping = lines(render_status(st));
  CHECK(
      stopping[0] ==
      "rcnetd 1.2.3  pid 4321  up 800ms  tun rc0 10.100.0.1/24 (netns node1)  log info  STOPPING");

  // glibc's heap, where the daemon sends it (mallinfo2: in use, held).
  st["daemon"] = daemon_object(185000, "", false);
  st["daemon"]["heap"] = {{"in_use_bytes", 1536u * 1024}, {"arena_bytes", 4u * 1024 * 1024}};
  CHECK(lines(render_status(st))[0] ==
        "rcnetd 1.2.3  pid 4321  up 3m05s  tun rc0 10.100.0.1/24  log info  heap 1.5MiB in use, "
        "4.0MiB held");
  st["daemon"]["heap"] = {{"in_use_bytes", "much"}};  // half a heap object: no heap words
  CHECK(lines(render_status(st))[0] ==
        "rcnetd 1.2.3  pid 4321  up 3m05s  tun rc0 10.100.0.1/24  log info");
}

TEST_CASE("render_status: a hostile daemon object prints dashes, never throws", "[ops][render]") {
  json st = status_json(cm::Snapshot{});
  st["daemon"] = {{"version", 7}, {"uptime_ms", "soon"}, {"tun", "rc0"}, {"stopping", "yes"}};
  std::string out;
  REQUIRE_NOTHROW(out = render_status(st));
  CHECK(lines(out)[0] == "rcnetd 7  pid -  log -");
  st["daemon"] = json::array({1, 2});
  REQUIRE_NOTHROW(out = render_status(st));
  CHECK(lines(out)[0].rfind("node ", 0) == 0);  // no daemon line at all
  st["daemon"] = daemon_object(-5, "", false);
  CHECK_THAT(render_status(st), Catch::Contains("up -"));
}

TEST_CASE("render_audit: seam_only and manager_only are named with their QPNs", "[ops][render]") {
  // The daemon's and the kernel's two QPs agree.
  const AuditResult agree{
      .kernel_only = {}, .daemon_only = {}, .daemon_count = 2, .kernel_count = 2};
  json a = audit_json(agree);
  a["seam_qps"] = 3;
  a["seam_only"] = {31};
  a["manager_only"] = json::array();
  a["ok"] = false;
  const auto out = lines(render_audit(a));
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "audit MISMATCH: daemon 2 QPs, kernel 2 QPs, seam 3 QPs");
  CHECK_THAT(out[1], Catch::StartsWith("seam only") && Catch::EndsWith(": 31"));

  a["seam_only"] = json::array();
  a["manager_only"] = {19, 23};
  const auto mgr = lines(render_audit(a));
  REQUIRE(mgr.size() == 2);
  CHECK_THAT(mgr[1], Catch::StartsWith("manager only") && Catch::EndsWith(": 19 23"));

  // The library's own audit (no seam fields) renders as before.
  const auto plain = lines(render_audit(audit_json(agree)));
  REQUIRE(plain.size() == 1);
  CHECK(plain[0] == "audit ok: daemon 2 QPs, kernel 2 QPs");
}

}  // namespace ctl_render_test
