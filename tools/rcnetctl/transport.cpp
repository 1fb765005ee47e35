// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl's transports (cli.hpp): one request and its reply over the ctl
// socket, and the stream of a monitor, each bounded by its deadline and
// ended by SIGINT/SIGTERM.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "cli.hpp"
#include "fd.hpp"

namespace rcnet::rcnetctl {

namespace {

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

Result<std::string> unix_socket_transport(const std::string& socket,
                                          const std::string& request_line, int timeout_ms) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (socket.empty() || socket.size() >= sizeof sa.sun_path)
    return Error::from_errno(ENAMETOOLONG, socket);
  std::memcpy(sa.sun_path, socket.c_str(), socket.size() + 1);
  Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return Error::from_errno(errno, "socket");
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) < 0)
    return Error::from_errno(errno, "connect " + socket);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t off = 0;
  while (off < request_line.size()) {
    const ssize_t n =
        ::send(s.fd, request_line.data() + off, request_line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error::from_errno(errno, "send to " + socket);
    off += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  for (;;) {
    const std::size_t nl = reply.find('\n');
    if (nl != std::string::npos)
      return reply.substr(0, nl + 1);
    pollfd p{s.fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0)
      return Error::from_errno(errno, "poll");
    if (rc == 0)
      return Error::from_errno(ETIMEDOUT, "waiting for rcnetd's reply");
    const ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error::from_errno(errno, "read from " + socket);
    if (n == 0)
      return Error::from_errno(ECONNRESET, "rcnetd closed the connection without a reply");
    reply.append(buf, static_cast<std::size_t>(n));
  }
}

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
  g_interrupted = 1;
}

// SIGINT and SIGTERM interrupt blocking calls (no SA_RESTART) while it lives.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptScope() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

Result<void> unix_socket_stream(const std::string& socket, const std::string& request_line,
                                const LineSink& on_line, int reply_timeout_ms) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (socket.empty() || socket.size() >= sizeof sa.sun_path)
    return Error::from_errno(ENAMETOOLONG, socket);
  std::memcpy(sa.sun_path, socket.c_str(), socket.size() + 1);
  InterruptScope interrupts;
  Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return Error::from_errno(errno, "socket");
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) < 0)
    return Error::from_errno(errno, "connect " + socket);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(reply_timeout_ms);
  std::size_t off = 0;
  while (off < request_line.size()) {
    const ssize_t n =
        ::send(s.fd, request_line.data() + off, request_line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR && g_interrupted == 0)
      continue;
    if (n < 0)
      return Error::from_errno(errno, "send to " + socket);
    off += static_cast<std::size_t>(n);
  }
  bool replied = false;
  std::string buf;
  char chunk[65536];
  for (;;) {
    for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
      const bool more = on_line(std::string_view(buf).substr(0, nl));
      replied = true;
      buf.erase(0, nl + 1);
      if (!more)
        return {};
    }
    if (g_interrupted != 0)
      return Error::from_errno(EINTR, "interrupted");
    pollfd p{s.fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, replied ? -1 : remaining_ms(deadline));
    if (rc < 0 && errno == EINTR)
      continue;  // g_interrupted is checked above
    if (rc < 0)
      return Error::from_errno(errno, "poll");
    if (rc == 0)
      return Error::from_errno(ETIMEDOUT, "waiting for rcnetd's reply");
    const ssize_t n = ::read(s.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error::from_errno(errno, "read from " + socket);
    if (n == 0) {
      if (!replied)
        return Error::from_errno(ECONNRESET, "rcnetd closed the connection without a reply");
      return {};  // the daemon went away: the monitor ends
    }
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace rcnet::rcnetctl
