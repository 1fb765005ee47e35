// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The provider rows (rdma/provider.hpp): chosen by transport, vendor id and
// driver, first match wins, a generic row per transport last; and the
// simulated devices (sim/profiles.hpp) get theirs from the same table.
#include <string_view>

#include "catch2_compat.hpp"
#include "rdma/provider.hpp"
#include "sim/profiles.hpp"

namespace rdma_provider_test {
using namespace rcnet;
using namespace rcnet::rdma;

TEST_CASE("a device gets the first row it matches; its transport's generic row last",
          "[rdma][provider]") {
  // siw by its vendor id, whatever its name says (rdma(8) may rename it).
  const ProviderProfile& siw = choose_provider(
      {.transport = Transport::kIwarp, .vendor_id = kSiwVendorId, .driver = "renamed"});
  CHECK(siw.name == "siw");
  CHECK(siw.mmap_key_guard);
  // Another iWARP device: the generic iWARP row, without siw's quirk.
  const ProviderProfile& other =
      choose_provider({.transport = Transport::kIwarp, .vendor_id = 0x1077, .driver = "qedr"});
  CHECK(other.name == "iwarp");
  CHECK_FALSE(other.mmap_key_guard);
  CHECK_FALSE(other.send_imm);
  CHECK_FALSE(other.rnr);
  CHECK(other.active_sends_first);
  CHECK(other.listen_takes_tcp_port);
  // The vendor id alone does not make an InfiniBand device siw.
  const ProviderProfile& ib = choose_provider(
      {.transport = Transport::kInfiniband, .vendor_id = kSiwVendorId, .driver = "rxe"});
  CHECK(ib.name == "infiniband");
  CHECK(ib.send_imm);
  CHECK(ib.rnr);
  CHECK(ib.last_wqe);
  CHECK(ib.drain_after_error);
  CHECK_FALSE(ib.active_sends_first);
  CHECK_FALSE(ib.error_closes_stream);
  CHECK_FALSE(ib.listen_takes_tcp_port);
  CHECK_FALSE(ib.mmap_key_guard);
}

TEST_CASE("every transport's last row matches all of its devices", "[rdma][provider]") {
  for (const Transport t : {Transport::kInfiniband, Transport::kIwarp}) {
    const ProviderRow* last = nullptr;
    for (const ProviderRow& row : kProviderRows) {
      if (row.transport == t)
        last = &row;
    }
    REQUIRE(last != nullptr);
    CHECK(last->vendor_id == 0);
    CHECK(last->driver.empty());
  }
}

TEST_CASE("a row's driver and vendor id must both match when set", "[rdma][provider]") {
  const ProviderRow rows[] = {
      {.transport = Transport::kInfiniband,
       .vendor_id = 0x02c9,
       .driver = "mlx5",
       .profile = {.name = "mlx5"}},
      {.transport = Transport::kInfiniband, .driver = "rxe", .profile = {.name = "rxe"}},
      {.transport = Transport::kInfiniband, .profile = {.name = "generic"}},
  };
  const auto name = [&](DeviceIdentity d) { return choose_provider(d, rows).name; };
  CHECK(name({.transport = Transport::kInfiniband, .vendor_id = 0x02c9, .driver = "mlx5"}) ==
        "mlx5");
  CHECK(name({.transport = Transport::kInfiniband, .vendor_id = 0x02c9, .driver = "mlx4"}) ==
        "generic");
  CHECK(name({.transport = Transport::kInfiniband, .vendor_id = 0xffffff, .driver = "rxe"}) ==
        "rxe");
  CHECK(name({.transport = Transport::kIwarp, .driver = "rxe"}) == "generic");
}

TEST_CASE("driver_of strips the instance number of a kernel device name", "[rdma][provider]") {
  CHECK(driver_of("mlx5_0") == "mlx5");
  CHECK(driver_of("mlx4_12") == "mlx4");
  CHECK(driver_of("rxe0") == "rxe");
  CHECK(driver_of("siw1") == "siw");
  CHECK(driver_of("siw") == "siw");
  CHECK(driver_of("") == "");
}

TEST_CASE("the simulated devices report the provider rows of the devices they stand for",
          "[rdma][provider][sim]") {
  CHECK(sim::caps_of(sim::Profile::kIwarp).provider.name == "siw");
  CHECK(sim::caps_of(sim::Profile::kIwarp).provider.transport == "iwarp");
  for (const sim::Profile p : {sim::Profile::kMlx, sim::Profile::kEhca, sim::Profile::kRxe}) {
    CHECK(sim::caps_of(p).provider.name == "infiniband");
    CHECK(sim::caps_of(p).provider.transport == "infiniband");
  }
  CHECK(sim::to_string(sim::Profile::kRxe) == "rxe");
}

}  // namespace rdma_provider_test
