// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// An LD_PRELOAD library for rdma-core's own tools on Soft-iWARP in the lab
// (the benchmark's ucmatose anchor, docs/lab.md "Soft-iWARP"). Each siw
// context that ibv_open_device(3) opens gets rcnetd's mmap key guard
// (rdma::siw_key_guard: one small CQ, kept for the context's life) before
// the tool creates anything on it, so that ucmatose's hundreds of CQs and
// QPs never meet the one key libsiw cannot use; without it ucmatose stops
// at "unable to create CQ" after a few dozen connections. Nothing else of
// the tool changes, and other devices are left alone. Not installed.
//
// librdmacm opens its devices through ibv_open_device@IBVERBS_1.1, which
// this unversioned definition, loaded first, takes (ld.so(8): a symbol
// without version information satisfies a versioned reference); the real
// one is found with dlvsym(3).
#include <dlfcn.h>
#include <infiniband/verbs.h>

#include "rdma/verbs_device.hpp"

extern "C" ibv_context* ibv_open_device(ibv_device* device) {
  using Open = ibv_context* (*)(ibv_device*);
  static const auto real =
      reinterpret_cast<Open>(dlvsym(RTLD_NEXT, "ibv_open_device", "IBVERBS_1.1"));
  if (real == nullptr)
    return nullptr;
  ibv_context* ctx = real(device);
  if (ctx == nullptr)
    return nullptr;
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) == 0 &&
      rcnet::rdma::choose_provider(rcnet::rdma::identity_of(device, attr)).mmap_key_guard) {
    rcnet::rdma::DeviceInfo info;
    info.name = ibv_get_device_name(device);
    info.vendor_id = attr.vendor_id;
    info.max_cqe = static_cast<std::uint32_t>(attr.max_cqe);
    // Kept for the context's life: closing the device frees it with the rest.
    (void)rcnet::rdma::siw_key_guard(ctx, info).release();
  }
  return ctx;
}
