// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// rcnetd's journald sink: every spdlog record goes to journald over its
// native protocol (sd_journal_sendv(3)), with the structured fields of the
// connection event being logged (log::current_fields(), lib/util/log.hpp), so
// that `journalctl PEER_ADDR=10.99.0.2` or `journalctl MESSAGE_ID=...` finds
// it. The fields are documented in rcnetd(8) "JOURNAL FIELDS"; the message
// ids in systemd/rcnet.catalog.
//
// Loop thread only, like all logging in rcnetd (null_mutex: no locking).
#include <spdlog/details/log_msg.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <string>
#include <vector>

#include "util/log.hpp"

namespace rcnet::daemon {

// syslog(3) priority for an spdlog level: trace and debug → 7 (LOG_DEBUG),
// info → 6, warn → 4, err → 3, critical → 2 (LOG_CRIT).
int syslog_priority(spdlog::level::level_enum level);

// The journal entry for one record, as "FIELD=value" strings in the order they
// are sent: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER=rcnetd, CODE_FILE, CODE_LINE
// and CODE_FUNC when the record has a source location, then each set member
// of `fields` (nullptr = none): PEER_NODE (decimal, as rcnetctl and the
// ctl JSON spell node ids), PEER_ADDR, QPN, REMOTE_QPN (decimal), CONN_STATE, TEARDOWN_STAGE,
// REASON, MESSAGE_ID. Values may contain newlines: sd_journal_sendv(3) sends those in the
// protocol's binary-safe form. Pure: no I/O.
std::vector<std::string> journal_fields(const spdlog::details::log_msg& msg,
                                        const log::Fields* fields);

class JournalSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  // Sends one entry. When journald cannot be reached (sd_journal_sendv
  // returns a negative errno: no /run/systemd/journal/socket), the message
  // goes to stderr instead, so nothing is lost silently.
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}
};

}  // namespace rcnet::daemon
