// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// VerbsSeam::open: bind and listen, choose the device's provider row
// (rdma/provider.hpp) once, join the device, make the completion channel
// and the CQ.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "rdma/provider.hpp"
#include "rdma/verbs_map.hpp"
#include "rdma/verbs_seam.hpp"
#include "rdma/verbs_util.hpp"

namespace rcnet::rdma {

namespace {

// Whether a TCP socket listens on `local`'s port, on its address or on the
// wildcard, as /proc/net/tcp and /proc/net/tcp6 list them (state 0A,
// LISTEN; an IPv4 address printed as the 32-bit word in host order). An
// iWARP device's listener takes a port of the TCP port space (iwpmd(8)), so
// such a socket keeps rdma_listen from working on it. false when the
// tables cannot be read.
bool tcp_listener_on(const Endpoint& local) {
  std::string v4_hex;
  if (local.addr.is_v4()) {
    const auto& b = local.addr.bytes;
    v4_hex = fmt::format("{:02X}{:02X}{:02X}{:02X}", b[3], b[2], b[1], b[0]);
  }
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::FILE* f = std::fopen(table, "re");
    if (f == nullptr)
      continue;
    char line[512];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) {
      char addr[64] = {}, rem[64] = {};
      unsigned port = 0, state = 0;
      unsigned slot = 0;
      if (std::sscanf(line, " %u: %63[0-9A-Fa-f]:%x %63s %x", &slot, addr, &port, rem, &state) != 5)
        continue;
      if (state != 0x0A || port != local.port)
        continue;
      const std::string a(addr);
      const bool wildcard = a.find_first_not_of('0') == std::string::npos;
      found = wildcard || (!v4_hex.empty() && a == v4_hex);
    }
    std::fclose(f);
    if (found)
      return true;
  }
  return false;
}

Error tcp_port_taken(int err, const Endpoint& local) {
  return Error::from_errno(
      err, fmt::format("cannot listen on {}: a TCP socket already listens on port {}, and an "
                       "iWARP device's listener shares the TCP port space (iwpmd(8)); stop that "
                       "service or choose another node.port",
                       local.to_string(), local.port));
}

// rdma_bind_addr(3) to `local`. The error names the likely cause: no RDMA
// device owns the address.
Result<void> bind(rdma_cm_id* listener, const Endpoint& local) {
  sockaddr_storage ss{};
  local.to_sockaddr(ss);
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&ss)) != 0) {
    const int err = errno;
    if (err == EADDRNOTAVAIL || err == ENODEV) {
      return Error::from_errno(
          err, "no RDMA device owns " + local.addr.to_string() + " (rdma_bind_addr)");
    }
    return Error::from_errno(err, "rdma_bind_addr " + local.to_string());
  }
  // Bound to an address that no RDMA device owns (e.g. a wildcard or a plain
  // Ethernet address): rdma_cm accepts the bind but has no device for us.
  if (listener->verbs == nullptr) {
    return Error::from_errno(ENODEV,
                             "no RDMA device owns " + local.addr.to_string() + " (rdma_bind_addr)");
  }
  return {};
}

// rdma_listen(3) on the bound `listener`. Where the provider's listener
// takes the TCP port (iWARP), the error names a TCP socket that holds it.
Result<void> listen(rdma_cm_id* listener, const Endpoint& local, int backlog,
                    const ProviderProfile& provider) {
  const bool tcp = provider.listen_takes_tcp_port;
  if (tcp && tcp_listener_on(local))
    return tcp_port_taken(EADDRINUSE, local);
  if (auto r = check_rdma(rdma_listen(listener, backlog), "rdma_listen"); !r) {
    if (tcp && r.error().code.value() == EADDRINUSE)
      return tcp_port_taken(EADDRINUSE, local);
    return with_context(r.error(), local.to_string());
  }
  return {};
}

// ibv_query_device(3): the limits open() clamps the configuration to, and
// the provider row (rdma/provider.hpp) chosen here, once, by the device's
// transport, vendor id and driver.
Result<DeviceInfo> query_device(ibv_context* verbs) {
  ibv_device_attr attr{};
  if (auto r = check_ibv_rc(ibv_query_device(verbs, &attr), "ibv_query_device"); !r) {
    return r.error();
  }
  DeviceInfo info;
  info.name = ibv_get_device_name(verbs->device);
  info.max_qp = static_cast<std::uint32_t>(attr.max_qp);
  info.max_qp_wr = static_cast<std::uint32_t>(attr.max_qp_wr);
  info.max_srq_wr = static_cast<std::uint32_t>(attr.max_srq_wr);
  info.max_cqe = static_cast<std::uint32_t>(attr.max_cqe);
  info.vendor_id = attr.vendor_id;
  info.profile = choose_provider(identity_of(verbs->device, attr));
  return info;
}

// The one CQ, on `channel`, of DeviceConfig::cq_size entries clamped to
// the device's max_cqe (logged).
Result<CqPtr> create_cq(ibv_context* verbs, ibv_comp_channel* channel, std::uint32_t cq_size,
                        const DeviceInfo& info) {
  const int cqe = static_cast<int>(std::min(cq_size, info.max_cqe));
  auto cq = check_ibv_ptr(ibv_create_cq(verbs, cqe, nullptr, channel, 0), "ibv_create_cq");
  if (!cq)
    return cq.error();
  CqPtr owner(*cq);
  if (cqe != static_cast<int>(cq_size)) {
    spdlog::warn("{}: cq_size {} clamped to max_cqe {}", info.name, cq_size, cqe);
  }
  return owner;
}

}  // namespace

Result<DeviceInfo> VerbsSeam::open(const Endpoint& local, const DeviceConfig& cfg) {
  if (!channel_ok_)
    return channel_error_;
  if (listener_)
    return Error::from_errno(EALREADY, "VerbsSeam::open: already open");
  cfg_ = cfg;

  // Locals first, moved into the members only on success: a failed open()
  // leaves the seam as it was. Declared in creation order so that unwinding
  // destroys them in reverse.
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel_.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    const int err = errno;
    if (err == ENODEV) {
      return Error::from_errno(err, "no RDMA device on this host (rdma_create_id)");
    }
    return Error::from_errno(err, "rdma_create_id (listener)");
  }
  CmIdPtr listener(raw);
  const CmIdHandle lh = next_handle_++;
  listener->context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(lh));
  if (auto r = bind(listener.get(), local); !r)
    return r.error();
  ibv_context* verbs = listener->verbs;

  auto info = query_device(verbs);
  if (!info)
    return info.error();
  if (auto r = listen(listener.get(), local, cfg.listen_backlog, info->profile); !r)
    return r.error();
  info->port = listener->port_num;
  auto device = join_device(verbs, *info);
  if (!device)
    return device.error();
  auto ch = check_ibv_ptr(ibv_create_comp_channel(verbs), "ibv_create_comp_channel");
  if (!ch)
    return ch.error();
  CompChannelPtr ch_owner(*ch);
  auto cq = create_cq(verbs, *ch, cfg.cq_size, *info);
  if (!cq)
    return cq.error();

  if (auto r = set_nonblocking((*ch)->fd, "the completion channel"); !r)
    return r.error();
  // Armed before any QP exists, so the first completion raises an event.
  if (auto r = check_ibv_rc(ibv_req_notify_cq(cq->get(), 0), "ibv_req_notify_cq"); !r) {
    return r.error();
  }
  cq_armed_ = true;

  listener_ = std::move(listener);
  listener_handle_ = lh;
  comp_channel_ = std::move(ch_owner);
  cq_ = std::move(*cq);
  device_ = std::move(*device);
  device_->attach(this);
  spdlog::info(
      "{}: listening on {} port {} (provider {}, max_qp {}, max_srq_wr {}, max_cqe {}, srq {}{})",
      info->name, local.to_string(), info->port, info->profile.name, info->max_qp, info->max_srq_wr,
      info->max_cqe, device_->srq() != nullptr ? "yes" : "no",
      device_->seams() > 1 ? ", PD and SRQ shared with another rail" : "");
  return std::move(*info);
}

Result<std::shared_ptr<VerbsDevice>> VerbsSeam::join_device(ibv_context* verbs,
                                                            const DeviceInfo& info) {
  std::shared_ptr<VerbsDevice> d = devices_ ? devices_->find(verbs) : nullptr;
  if (!d) {
    auto made = VerbsDevice::create(verbs, cfg_.srq_size, info);
    if (!made)
      return made.error();
    if (devices_)
      devices_->add(*made);
    return std::move(*made);
  }
  if (d->lost()) {
    // Another seam still releases its objects of the lost device; the
    // caller tries again (the daemon's readopt timer).
    return Error::from_errno(EBUSY, "RDMA device " + info.name +
                                        " is still being released by another rail after its loss");
  }
  if ((d->srq_size() > 0) != (cfg_.srq_size > 0)) {
    return Error::from_errno(EINVAL, "RDMA device " + info.name + ": another rail on it " +
                                         (d->srq_size() > 0 ? "uses an SRQ, this one none"
                                                            : "uses none, this one an SRQ") +
                                         " (rails on one device need the same srq_size)");
  }
  return d;
}

}  // namespace rcnet::rdma
