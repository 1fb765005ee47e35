// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// VerbsSeam on a host without RDMA: it must fail with an error that names
// what is missing, never crash. Which branch runs depends on the host: with
// no /dev/infiniband/rdma_cm (no rdma_ucm) create() fails; with rdma_cm but
// no device owning the address, open() fails.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include "catch2_compat.hpp"

#include "rdma/verbs_seam.hpp"

namespace rdma_verbs_seam_test {
using namespace rcnet;
using namespace rcnet::rdma;

namespace {
// TEST-NET-2 style address that no device on a test host owns.
Endpoint unowned() {
  Endpoint ep;
  ep.addr = *IpAddr::parse("10.99.0.9");
  ep.port = 7471;
  return ep;
}
}  // namespace

TEST_CASE("VerbsSeam without an RDMA device reports it", "[rdma][verbs]") {
  const bool have_rdma_cm = access("/dev/infiniband/rdma_cm", F_OK) == 0;
  auto seam = VerbsSeam::create();
  if (!have_rdma_cm) {
    REQUIRE_FALSE(seam.ok());
    INFO(seam.error().message());
    CHECK(seam.error().context.find("/dev/infiniband/rdma_cm") != std::string::npos);
    CHECK(seam.error().code.value() != 0);
    return;
  }
  REQUIRE(seam.ok());
  VerbsSeam& s = **seam;
  CHECK(s.cm_fd() >= 0);
  CHECK(s.async_fd() == -1);
  CHECK(s.cq_fd() == -1);
  auto info = s.open(unowned(), DeviceConfig{});
  REQUIRE_FALSE(info.ok());
  INFO(info.error().message());
  CHECK(info.error().context.find("no RDMA device") != std::string::npos);
  CHECK((info.error().code.value() == EADDRNOTAVAIL || info.error().code.value() == ENODEV));
  // A failed open() leaves nothing half-built behind.
  CHECK(s.async_fd() == -1);
  CHECK(s.cq_fd() == -1);
  CHECK(s.qpns().empty());
}

TEST_CASE("an unopened VerbsSeam refuses operations instead of crashing", "[rdma][verbs]") {
  VerbsSeam s;  // may be inert (no rdma_cm): every call must still be safe
  CHECK(s.async_fd() == -1);
  CHECK(s.cq_fd() == -1);
  CHECK_FALSE(s.dispatch_completions());
  s.dispatch_async_events();
  if (s.cm_fd() >= 0)
    s.dispatch_cm_events();  // nothing pending: returns on EAGAIN

  std::array<std::byte, 64> mem{};
  CHECK_FALSE(s.register_memory(mem).ok());
  CHECK_FALSE(s.destroy_id(12345).ok());
  CHECK_FALSE(s.destroy_qp(12345).ok());
  CHECK_FALSE(s.modify_qp_to_error(12345).ok());
  CHECK_FALSE(s.post_drain(12345, 1).ok());
  CHECK_FALSE(s.arm_srq_limit(8).ok());
  const std::array<std::uint64_t, 1> ids{1};
  const std::array<Sge, 1> sges{};
  CHECK_FALSE(s.post_srq_recv(ids, sges).ok());
  auto e = s.destroy_id(12345);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code.value() != 0);
  CHECK(s.qpns().empty());
}

}  // namespace rdma_verbs_seam_test
