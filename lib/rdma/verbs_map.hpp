// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Pure conversions from rdma-core values to the seam's value types. No calls
// into rdma-core, so they are testable on a machine without RDMA hardware.
// Values rcnet does not act on map to kOther (the manager counts them).

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <optional>

#include "rdma/seam.hpp"
#include "util/address.hpp"

namespace rcnet::rdma {

// rdma_get_cm_event(3) event types.
CmEventType map_cm_event(rdma_cm_event_type t);
// ibv_get_async_event(3) event types.
AsyncEventType map_async_event(ibv_event_type t);
// True for the event types whose element is a QP (ibv_get_async_event(3)
// "QP events"), i.e. where ibv_async_event::element.qp is valid.
bool is_qp_event(ibv_event_type t);
// ibv_poll_cq(3) status and opcode.
WcStatus map_wc_status(ibv_wc_status s);
WcOpcode map_wc_opcode(ibv_wc_opcode op);
// One ibv_wc as the manager sees it: imm_data converted to host order and
// has_imm taken from IBV_WC_WITH_IMM. On error status the opcode, byte_len and
// imm fields are undefined by ibv_poll_cq(3), so only wr_id, status and qpn
// are copied (the rest stays at its defaults).
WorkCompletion to_work_completion(const ibv_wc& wc);
// An IPv4/IPv6 sockaddr as an Endpoint (port in host order); nullopt for any
// other family.
std::optional<Endpoint> endpoint_from_sockaddr(const sockaddr* sa);

}  // namespace rcnet::rdma
