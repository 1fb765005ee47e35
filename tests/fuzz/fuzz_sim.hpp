// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What the fuzzers over the simulated fabric (fuzz_manager, fuzz_rails)
// share: the log sink that counts the managers' "BUG:" records, and the
// byte reader their inputs are decoded with.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace rcnet::fuzz {

// Counts the "BUG:" records (critical); with `echo` (RCNET_FUZZ_LOG set to
// a level) prints every record too, for a reproducer run.
class BugSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::uint64_t bugs = 0;
  std::string last;
  bool echo = false;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (text.substr(0, 4) == "BUG:") {
      ++bugs;
      last = std::string(text);
    }
    if (echo) {
      spdlog::memory_buf_t buf;
      formatter_->format(msg, buf);
      std::fwrite(buf.data(), 1, buf.size(), stderr);
    }
  }
  void flush_() override {}
};

// The fuzzer's input, one byte at a time; 0 past its end.
struct Input {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 0;
  bool done() const { return pos >= bytes.size(); }
  std::uint8_t u8() { return pos < bytes.size() ? bytes[pos++] : 0; }
};

}  // namespace rcnet::fuzz
