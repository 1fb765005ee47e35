// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The two 5-bit timer encodings of an RC QP (ibv_modify_qp(3) fields
// `timeout` and `min_rnr_timer`), decoded. Used by the simulated HCA and by
// tests; rcnetd.toml writes the codes (transport.ack_timeout, rnr_timer).

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "util/time.hpp"

namespace rcnet::rdma {

// Local ACK timeout (IB spec 9.7.6.1.3, rdma_set_option(3)
// RDMA_OPTION_ID_ACK_TIMEOUT): a transport retry after 4.096 us * 2^code.
// Code 0 disables the timer (the spec's "infinite"): a dead peer is then
// never reported by retry exceeded; nullopt. Codes above 31 count as 31.
constexpr std::optional<Duration> ack_timeout_duration(std::uint8_t code) {
  if (code == 0)
    return std::nullopt;
  return std::chrono::nanoseconds(4096) * (std::int64_t{1} << (code > 31 ? 31 : code));
}

// RNR NAK timer (the AETH's timer field, IB spec vol. 1 ch. 9): how long the
// requester waits before resending after the responder's RNR NAK. The
// responder's QP attribute min_rnr_timer picks the code, in microseconds:
// 0 is the longest (655.36 ms), then 0.01 ms rising to 491.52 ms at 31.
inline constexpr std::array<std::uint32_t, 32> kRnrTimerUs = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};

constexpr Duration rnr_timer_duration(std::uint8_t code) {
  return std::chrono::microseconds(kRnrTimerUs[code > 31 ? 31 : code]);
}

}  // namespace rcnet::rdma
