// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rcnet::daemon {

spdlog::level::level_enum to_spdlog(LogLevel l) {
  using L = spdlog::level::level_enum;
  switch (l) {
    case LogLevel::kTrace:
      return L::trace;
    case LogLevel::kDebug:
      return L::debug;
    case LogLevel::kInfo:
      return L::info;
    case LogLevel::kWarn:
      return L::warn;
    case LogLevel::kError:
      return L::err;
    case LogLevel::kCritical:
      return L::critical;
    case LogLevel::kOff:
      return L::off;
  }
  return L::info;
}

LogLevel from_spdlog(spdlog::level::level_enum l) {
  using L = spdlog::level::level_enum;
  switch (l) {
    case L::trace:
      return LogLevel::kTrace;
    case L::debug:
      return LogLevel::kDebug;
    case L::info:
      return LogLevel::kInfo;
    case L::warn:
      return LogLevel::kWarn;
    case L::err:
      return LogLevel::kError;
    case L::critical:
      return LogLevel::kCritical;
    case L::off:
    case L::n_levels:
      break;
  }
  return LogLevel::kOff;
}

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (js == nullptr)
    return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) < 0)
    return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2)
    return false;
  return dev == st.st_dev && ino == st.st_ino;
}

LogTarget resolve_log_target(LogTarget t) {
  if (t != LogTarget::kAuto)
    return t;
  return stderr_is_journal() ? LogTarget::kJournal : LogTarget::kStderr;
}

void setup_logging(LogTarget target, LogLevel level) {
  spdlog::sink_ptr sink;
  if (resolve_log_target(target) == LogTarget::kJournal)
    sink = make_journal_sink();
  if (!sink) {
    // Unbuffered stderr so a crash loses nothing, and journald's stdout
    // capture keeps line order with other units.
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    // journald stamps every line itself; anywhere else (a terminal, a lab
    // log file) the wall-clock time in ms is what lets an operator measure
    // how long a teardown or a reap took.
    sink->set_pattern(stderr_is_journal() ? "[rcnetd] %l %v"
                                          : "%Y-%m-%dT%H:%M:%S.%e [rcnetd] %l %v");
  }
  auto logger = std::make_shared<spdlog::logger>("rcnetd", sink);
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void set_log_level(LogLevel level) {
  spdlog::default_logger()->set_level(to_spdlog(level));
}

}  // namespace rcnet::daemon
