// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// What the fuzzers over the simulated fabric (fuzz_manager, fuzz_rails)
// share: the log sink that counts the managers' "BUG:" records, the byte
// reader their inputs are decoded with, and their libFuzzer entry points'
// bodies (install_bug_sink, run_input).
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
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

// For LLVMFuzzerInitialize: the default logger writes to a new BugSink, which
// it returns (the logger owns it, for the life of the process). It logs
// critical records only (the "BUG:" ones), unless RCNET_FUZZ_LOG names a
// spdlog level: then that level and above, each also printed (a reproducer
// run).
inline BugSink* install_bug_sink() {
  auto sink = std::make_shared<BugSink>();
  auto logger = std::make_shared<spdlog::logger>("rcnet", sink);
  const char* env = std::getenv("RCNET_FUZZ_LOG");
  if (env != nullptr) {
    sink->echo = true;
    logger->set_level(spdlog::level::from_str(env));
  } else {
    logger->set_level(spdlog::level::critical);
  }
  spdlog::set_default_logger(logger);
  return sink.get();
}

// A fuzzer's input: a header of `header_size` bytes, then steps of 4 bytes
// {op, a, b, x}, at most `max_steps` of them (the rest is not read).
struct Format {
  std::size_t header_size;
  std::size_t max_steps;
};

// For LLVMFuzzerTestOneInput: one input run on a world of the simulated
// fabric. An input shorter than its header is skipped; otherwise `log`'s
// count starts at 0, World(Input&) reads the header and builds the world,
// check(world) runs before the first step and after each
// step(world, op, a, b, x), and finish(world) ends the run (heal, settle,
// the final checks). A violated property aborts (fuzz_check.hpp).
template <class World, class Check, class Step, class Finish>
int run_input(std::span<const std::uint8_t> data, Format format, BugSink& log, Check check,
              Step step, Finish finish) {
  if (data.size() < format.header_size)
    return 0;
  log.bugs = 0;
  Input in{data};
  World world(in);
  check(world);
  for (std::size_t i = 0; i < format.max_steps && !in.done(); ++i) {
    const std::uint8_t op = in.u8(), a = in.u8(), b = in.u8(), x = in.u8();
    step(world, op, a, b, x);
    check(world);
  }
  finish(world);
  return 0;
}

}  // namespace rcnet::fuzz
