// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What rcnet-bench-tun-write's files share (tun_write_bench.cpp says what the
// benchmark measures): its name in messages and its way out of a failed call.
#include <string>

namespace rcnet::bench::tun_write {

inline constexpr const char* kProg = "rcnet-bench-tun-write";

// Prints "rcnet-bench-tun-write: CALL: strerror(ERR)" and exits 1: a
// benchmark that cannot set up or write has no figure to give.
[[noreturn]] void fail(const std::string& call, int err);

}  // namespace rcnet::bench::tun_write
