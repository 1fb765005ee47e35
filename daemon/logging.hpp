// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's logging: spdlog's default logger, which librcnet logs through too.
// setup_logging() is the one place sinks are chosen; the journal sink
// (daemon/journal_sink.*) plugs in through make_journal_sink().
#include <spdlog/common.h>
#include <spdlog/sinks/sink.h>

#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace rcnet::daemon {

using config::LogLevel;
using config::LogTarget;

// The config's log levels and spdlog's, both ways. spdlog's n_levels (not a
// level) maps to kOff.
spdlog::level::level_enum to_spdlog(LogLevel l);
LogLevel from_spdlog(spdlog::level::level_enum l);
using config::parse_log_target;  // "auto" | "journal" | "stderr" (config/log_level.hpp)

// kAuto resolves to the journal when stderr is already connected to it
// (systemd sets $JOURNAL_STREAM to stderr's "device:inode", systemd.exec(5)),
// else to stderr.
LogTarget resolve_log_target(LogTarget t);

// Whether stderr is the journald stream systemd connected ($JOURNAL_STREAM
// names stderr's "device:inode", systemd.exec(5)).
bool stderr_is_journal();

// Installs the default logger ("rcnetd") with the sink for `target` at
// `level`. Safe to call again (e.g. on SIGHUP); the old logger is replaced.
// stderr format: "[rcnetd] level message" when stderr goes to journald (which
// stamps the time itself), else "YYYY-MM-DDTHH:MM:SS.mmm [rcnetd] level
// message" (local wall-clock time, ms).
void setup_logging(LogTarget target, LogLevel level);
void set_log_level(LogLevel level);

// The journald sink (daemon/journal_sink.cpp); never null.
spdlog::sink_ptr make_journal_sink();

}  // namespace rcnet::daemon
