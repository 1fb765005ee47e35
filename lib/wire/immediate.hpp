// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The immediate of every rcnet SEND (IBV_WR_SEND_WITH_IMM, host order here)
// says what the SEND carries (docs/design.md "Data path"). Part of the wire
// protocol, like the private data (wire/private_data.hpp): both ends must
// agree on these values. A receiver ignores a SEND whose immediate it does
// not know. A SEND without an immediate is framed by its in-band header
// instead (wire/frame_header.hpp), whose kind byte is the low byte of these.
#include <cstdint>

namespace rcnet::wire {

inline constexpr std::uint32_t kImmData = 0x52430001;     // one IP packet
inline constexpr std::uint32_t kImmControl = 0x52430002;  // zero-length reclaim SEND, ignored
// A virtio_net_hdr + IP packet (a frame, wire/vnet_hdr.hpp), sent only on a
// connection that negotiated kCapGso. The receiver frames by the immediate,
// not by its own record of the negotiation: the active side learns the
// peer's capability from the REP, in its ESTABLISHED event, and the passive
// side may already send once the RTU arrives, so the first frames can
// complete on the shared CQ before that event is read (found by the manager
// fuzzer).
inline constexpr std::uint32_t kImmFrame = 0x52430003;
// A rail message (wire/rail_message.hpp): a link's peer tells us one of its
// rails went down or came back, or probes a standby link. Sent only on a
// connection whose peer advertised kCapRails (wire/private_data.hpp); an
// older peer would ignore it anyway, as any unknown immediate.
inline constexpr std::uint32_t kImmRail = 0x52430004;
// The active side's proof (wire/auth_message.hpp): its first SEND on a
// connection whose REP carried the passive side's proof (kCapAuth). Sent
// only then; an older peer never negotiates kCapAuth, so never sees it.
inline constexpr std::uint32_t kImmAuth = 0x52430005;

}  // namespace rcnet::wire
