// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "journal_sink.hpp"

#include <fmt/format.h>
#include <sys/uio.h>
#include <syslog.h>
// sd_journal_sendv() is otherwise a macro adding CODE_FILE/LINE/FUNC of this
// sink's own call site to every entry (sd-journal.h); the record's source
// location, when it has one, is sent instead.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include <cstdio>
#include <memory>

#include "logging.hpp"

namespace rcnet::daemon {

int syslog_priority(spdlog::level::level_enum level) {
  using L = spdlog::level::level_enum;
  switch (level) {
    case L::trace:
    case L::debug:
      return LOG_DEBUG;
    case L::info:
      return LOG_INFO;
    case L::warn:
      return LOG_WARNING;
    case L::err:
      return LOG_ERR;
    case L::critical:
      return LOG_CRIT;
    case L::off:
    case L::n_levels:
      break;
  }
  return LOG_INFO;
}

std::vector<std::string> journal_fields(const spdlog::details::log_msg& msg,
                                        const log::Fields* fields) {
  std::vector<std::string> out;
  out.reserve(16);
  out.push_back("MESSAGE=" + std::string(msg.payload.data(), msg.payload.size()));
  out.push_back(fmt::format("PRIORITY={}", syslog_priority(msg.level)));
  out.emplace_back("SYSLOG_IDENTIFIER=rcnetd");
  if (!msg.source.empty()) {
    out.push_back(std::string("CODE_FILE=") + msg.source.filename);
    out.push_back(fmt::format("CODE_LINE={}", msg.source.line));
    if (msg.source.funcname != nullptr && msg.source.funcname[0] != '\0')
      out.push_back(std::string("CODE_FUNC=") + msg.source.funcname);
  }
  if (fields == nullptr)
    return out;
  const log::Fields& f = *fields;
  if (f.peer_node != 0)
    out.push_back(fmt::format("PEER_NODE={}", f.peer_node));
  if (!f.peer_addr.empty())
    out.push_back("PEER_ADDR=" + f.peer_addr.to_string());
  if (f.peer_port != 0)
    out.push_back(fmt::format("PEER_PORT={}", f.peer_port));
  if (f.qpn != 0)
    out.push_back(fmt::format("QPN={}", f.qpn));
  if (f.remote_qpn != 0)
    out.push_back(fmt::format("REMOTE_QPN={}", f.remote_qpn));
  if (!f.conn_state.empty())
    out.push_back("CONN_STATE=" + std::string(f.conn_state));
  if (!f.teardown_stage.empty())
    out.push_back("TEARDOWN_STAGE=" + std::string(f.teardown_stage));
  if (!f.reason.empty())
    out.push_back("REASON=" + f.reason);
  if (f.rail >= 0)
    out.push_back(fmt::format("RAIL={}", f.rail));
  if (!f.message_id.empty())
    out.push_back("MESSAGE_ID=" + std::string(f.message_id));
  return out;
}

void JournalSink::sink_it_(const spdlog::details::log_msg& msg) {
  const std::vector<std::string> entry = journal_fields(msg, log::current_fields());
  std::vector<iovec> iov(entry.size());
  for (std::size_t i = 0; i < entry.size(); ++i) {
    // sd_journal_sendv(3) only reads the buffers.
    iov[i].iov_base = const_cast<char*>(entry[i].data());
    iov[i].iov_len = entry[i].size();
  }
  if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) < 0) {
    std::fprintf(stderr, "[rcnetd] %.*s %.*s\n",
                 static_cast<int>(spdlog::level::to_string_view(msg.level).size()),
                 spdlog::level::to_string_view(msg.level).data(),
                 static_cast<int>(msg.payload.size()), msg.payload.data());
  }
}

spdlog::sink_ptr make_journal_sink() {
  return std::make_shared<JournalSink>();
}

}  // namespace rcnet::daemon
