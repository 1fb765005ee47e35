// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "ctl_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rcnet::daemon {

struct CtlServer::Client {
  std::uint64_t id = 0;
  UniqueFd fd;
  // Declared after fd: the sources go before the fd they watch is closed.
  EventSource io;
  EventSource timer;
  PeerCred cred;
  ctl::Access access = ctl::Access::kDenied;
  std::string in;
  std::string out;
  std::size_t out_off = 0;
  TimePoint accepted{};
  TimePoint last_active{};  // accept, then each complete request: the eviction order
  bool heard = false;       // any byte received: the first-request timeout is over
  bool read_closed = false;
  bool close_after_flush = false;
  bool closed = false;
  bool monitor = false;  // a subscriber: events are pushed, input is ignored
};

CtlServer::CtlServer(EventLoop& loop, std::unique_ptr<CtlBackend> backend, CtlServerOptions opts)
    : loop_(loop), backend_(std::move(backend)), opts_(std::move(opts)) {}

CtlServer::~CtlServer() {
  clients_.clear();
  closed_.clear();
  listen_src_.reset();
  // Only our own socket file: a second daemon may have replaced it since.
  struct stat st {};
  if (!opts_.socket_path.empty() && ::lstat(opts_.socket_path.c_str(), &st) == 0 &&
      st.st_dev == sock_dev_ && st.st_ino == sock_ino_)
    ::unlink(opts_.socket_path.c_str());
}

Result<std::unique_ptr<CtlServer>> CtlServer::create(EventLoop& loop,
                                                     std::unique_ptr<CtlBackend> backend,
                                                     CtlServerOptions opts) {
  std::unique_ptr<CtlServer> s(new CtlServer(loop, std::move(backend), std::move(opts)));
  if (auto r = s->listen(); !r)
    return r.error();
  return s;
}

Result<void> CtlServer::listen() {
  const std::string& path = opts_.socket_path;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa.sun_path)
    return Error::from_errno(ENAMETOOLONG, "ctl socket " + path);
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const auto salen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);

  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::create_directories(dir, ec) && ec)
      return Error{ec, "ctl socket directory " + dir.string()};
    // Clients need to search it whatever rcnetd's umask (UMask=0077 in the unit).
    if (::chmod(dir.c_str(), 0755) < 0)
      return Error::from_errno(errno, "chmod 0755 " + dir.string());
  }

  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Error::from_errno(EEXIST, "ctl socket " + path + " exists and is not a socket");
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!probe)
      return Error::from_errno(errno, "socket AF_UNIX");
    const int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&sa), salen);
    if (rc == 0 || errno == EAGAIN)
      return Error::from_errno(EADDRINUSE,
                               "ctl socket " + path + ": another rcnetd is listening on it");
    // ECONNREFUSED: left behind by a daemon that died; nobody listens.
    if (::unlink(path.c_str()) < 0 && errno != ENOENT)
      return Error::from_errno(errno, "unlink stale ctl socket " + path);
    spdlog::info("ctl: replaced stale socket {}", path);
  }

  listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_)
    return Error::from_errno(errno, "socket AF_UNIX");
  if (::bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&sa), salen) < 0)
    return Error::from_errno(errno, "bind ctl socket " + path);
  if (::chmod(path.c_str(), 0660) < 0)
    return Error::from_errno(errno, "chmod 0660 " + path);
  gid_ = lookup_group(opts_.group);
  if (gid_) {
    if (::chown(path.c_str(), static_cast<uid_t>(-1), *gid_) < 0)
      spdlog::warn("ctl: chgrp {} {}: {} (members of {} cannot connect)", opts_.group, path,
                   std::strerror(errno), opts_.group);
  } else {
    spdlog::warn("ctl: group '{}' does not exist: only root may use {}", opts_.group, path);
  }
  if (::lstat(path.c_str(), &st) == 0) {
    sock_dev_ = st.st_dev;
    sock_ino_ = st.st_ino;
  }
  if (::listen(listen_fd_.get(), 16) < 0)
    return Error::from_errno(errno, "listen ctl socket " + path);

  auto src =
      loop_.add_io(listen_fd_.get(), EPOLLIN, "ctl-listen", [this](std::uint32_t) { on_accept(); });
  if (!src)
    return src.error();
  listen_src_ = std::move(*src);
  auto reaper = loop_.add_defer("ctl-reaper", [this] { reap_closed(); });
  if (!reaper)
    return reaper.error();
  reaper_ = std::move(*reaper);
  spdlog::info("ctl: listening on {}", path);
  return {};
}

void CtlServer::reloaded(const config::Config& next) {
  (void)next;  // ctl.socket and ctl.group changes need a restart
  gid_ = lookup_group(opts_.group);
}

void CtlServer::stopping() {
  stopping_ = true;
  backend_->stopping();
  std::vector<Client*> subs;
  for (auto& kv : clients_) {
    if (kv.second->monitor && !kv.second->closed && !kv.second->close_after_flush)
      subs.push_back(kv.second.get());
  }
  for (Client* c : subs) {
    c->out += ctl::end_line("rcnetd stopping");
    c->close_after_flush = true;
    update_events(*c);
  }
}

std::size_t CtlServer::client_count() const {
  return clients_.size();
}

std::size_t CtlServer::monitor_count() const {
  return monitors_;
}

void CtlServer::on_accept() {
  // Bounded per wakeup so that a connect storm cannot starve the data path;
  // the listening socket stays readable and the loop comes back.
  for (int k = 0; k < 64; ++k) {
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno != EAGAIN)
        spdlog::warn("ctl: accept: {}", std::strerror(errno));
      return;
    }
    auto c = std::make_unique<Client>();
    c->id = next_id_++;
    auto cred = opts_.credentials ? opts_.credentials(fd.get()) : peer_credentials(fd.get());
    if (cred) {
      c->cred = std::move(*cred);
      c->access =
          ctl::access_for(c->cred.uid, c->cred.groups, gid_.value_or(static_cast<gid_t>(-1)));
    } else {
      spdlog::warn("ctl: {}: client refused", cred.error().message());
      // Not root, whoever it is: no reserved slot, and the unknown share one cap.
      c->cred.uid = static_cast<uid_t>(-1);
      c->access = ctl::Access::kDenied;
    }
    Refusal why = refusal(c->cred.uid);
    // Idle connections give way rather than lock a new client out.
    while ((why == Refusal::kFull || why == Refusal::kReserved) && evict_idle_for(c->cred.uid))
      why = refusal(c->cred.uid);
    if (why != Refusal::kNone) {
      refuse(std::move(fd), refusal_message(why, c->cred.uid));
      continue;
    }
    const std::uint64_t id = c->id;
    auto io = loop_.add_io(fd.get(), EPOLLIN, "ctl-client",
                           [this, id](std::uint32_t revents) { on_client_io(id, revents); });
    if (!io) {
      spdlog::warn("ctl: {}", io.error().message());
      continue;
    }
    c->accepted = loop_.now();
    c->last_active = c->accepted;
    const Duration first = std::min(opts_.first_request_timeout, opts_.request_timeout);
    auto timer = loop_.add_time(c->accepted + first, std::chrono::milliseconds(100),
                                "ctl-client-timeout", [this, id] { on_client_timeout(id); });
    if (!timer) {
      spdlog::warn("ctl: {}", timer.error().message());
      continue;
    }
    c->fd = std::move(fd);
    c->io = std::move(*io);
    c->timer = std::move(*timer);
    ++counters_.ctl_clients_accepted;
    spdlog::debug("ctl: client {} pid {} uid {} access {}", id, c->cred.pid, c->cred.uid,
                  c->access == ctl::Access::kAdmin  ? "admin"
                  : c->access == ctl::Access::kRead ? "read"
                                                    : "denied");
    clients_.emplace(id, std::move(c));
  }
}

CtlServer::Refusal CtlServer::refusal(uid_t uid) const {
  const std::size_t n = clients_.size();
  if (n >= opts_.max_clients)
    return Refusal::kFull;
  if (uid == 0)
    return Refusal::kNone;
  const std::size_t reserved =
      std::min(opts_.root_reserved_clients, opts_.max_clients > 0 ? opts_.max_clients - 1 : 0);
  if (n >= opts_.max_clients - reserved)
    return Refusal::kReserved;
  const auto mine = static_cast<std::size_t>(
      std::count_if(clients_.begin(), clients_.end(),
                    [uid](const auto& kv) { return kv.second->cred.uid == uid; }));
  if (mine >= opts_.max_clients_per_uid)
    return Refusal::kPerUid;
  return Refusal::kNone;
}

std::string CtlServer::refusal_message(Refusal why, uid_t uid) {
  const std::size_t n = clients_.size();
  switch (why) {
    case Refusal::kFull:
      ++counters_.ctl_clients_refused_full;
      return fmt::format("too many ctl clients ({} connected); try again", n);
    case Refusal::kReserved:
      ++counters_.ctl_clients_refused_reserved;
      return fmt::format("too many ctl clients ({} connected, the rest kept for root); try again",
                         n);
    case Refusal::kPerUid: {
      const auto mine = static_cast<std::size_t>(
          std::count_if(clients_.begin(), clients_.end(),
                        [uid](const auto& kv) { return kv.second->cred.uid == uid; }));
      ++counters_.ctl_clients_refused_per_uid;
      return fmt::format("too many ctl clients for uid {} ({} connected, at most {}); try again",
                         uid, mine, opts_.max_clients_per_uid);
    }
    case Refusal::kNone:
      break;
  }
  return "try again";
}

bool CtlServer::evict_idle_for(uid_t uid) {
  Client* oldest = nullptr;
  for (auto& kv : clients_) {
    Client& c = *kv.second;
    const bool idle = !c.monitor && !c.closed && !c.close_after_flush && c.in.empty() &&
                      c.out_off >= c.out.size();
    if (!idle || (uid != 0 && c.cred.uid == 0))
      continue;
    if (oldest == nullptr || c.last_active < oldest->last_active)
      oldest = &c;
  }
  if (oldest == nullptr)
    return false;
  spdlog::debug("ctl: client {} (pid {} uid {}) idle for {:.0f} ms: closed to make room",
                oldest->id, oldest->cred.pid, oldest->cred.uid,
                to_ms(loop_.now() - oldest->last_active));
  ++counters_.ctl_clients_evicted;
  close_client(*oldest);  // leaves clients_ at once
  return true;
}

void CtlServer::refuse(UniqueFd fd, std::string_view message) {
  spdlog::debug("ctl: client refused: {}", message);
  const std::string r = ctl::error_reply(ctl::ErrorCode::kBusy, message);
  // Best effort: a fresh socket's buffer takes one short line.
  (void)!::send(fd.get(), r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)::shutdown(fd.get(), SHUT_WR);
  // Closing a Unix socket with unread input makes the client's next read fail
  // with ECONNRESET once it has read our line: swallow what it already sent
  // (bounded) so that it sees the reply, then a plain end of file.
  char buf[4096];
  for (int k = 0; k < 16; ++k) {
    if (::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT) <= 0)
      break;
  }
}

void CtlServer::on_client_io(std::uint64_t id, std::uint32_t revents) {
  auto it = clients_.find(id);
  if (it == clients_.end() || it->second->closed)
    return;
  Client& c = *it->second;
  if ((revents & EPOLLIN) != 0 || (revents & (EPOLLHUP | EPOLLERR)) != 0) {
    char buf[16384];
    for (int k = 0; k < 16 && !c.read_closed && !c.close_after_flush; ++k) {
      const ssize_t n = ::read(c.fd.get(), buf, sizeof buf);
      if (n > 0) {
        if (!c.heard) {
          // A partial request now has the full request timeout, from connect.
          c.heard = true;
          (void)c.timer.arm_at(c.accepted + opts_.request_timeout);
        }
        c.in.append(buf, static_cast<std::size_t>(n));
        process_input(c);
        if (c.closed)
          return;
        continue;
      }
      if (n == 0) {
        c.read_closed = true;
        break;
      }
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN)
        break;
      close_client(c);  // ECONNRESET and friends
      return;
    }
  }
  if (c.read_closed && !c.in.empty() && !c.close_after_flush) {
    // A last request without '\n' before the client shut its side down.
    c.in.push_back('\n');
    process_input(c);
    if (c.closed)
      return;
  }
  flush(c);
  if (c.closed)
    return;
  update_events(c);
}

void CtlServer::process_input(Client& c) {
  if (c.monitor) {
    c.in.clear();  // a subscriber's input is ignored
    return;
  }
  for (;;) {
    const std::size_t nl = c.in.find('\n');
    if (nl == std::string::npos) {
      if (c.in.size() > ctl::kMaxRequestBytes + 1)
        break;  // oversized, handled below
      return;
    }
    if (nl > ctl::kMaxRequestBytes + 1)
      break;
    std::string line = c.in.substr(0, nl);
    c.in.erase(0, nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;  // a blank line is no request
    c.last_active = loop_.now();
    HandledRequest h = handle_request(line, c.access, *backend_, &counters_);
    ++counters_.ctl_requests;
    if (opts_.served)
      opts_.served();
    if (h.refused)
      ++counters_.ctl_requests_refused;
    c.out += h.reply;
    if (h.monitor) {
      // No request timeout from now on; the rest of its input is ignored.
      c.monitor = true;
      c.in.clear();
      (void)c.timer.set_enabled(SD_EVENT_OFF);
      ++monitors_;
      ++counters_.ctl_monitors;
      spdlog::debug("ctl: client {} (pid {}) monitors connection events", c.id, c.cred.pid);
      if (stopping_) {
        c.out += ctl::end_line("rcnetd stopping");
        c.close_after_flush = true;
      }
      return;
    }
    (void)c.timer.arm_at(loop_.now() + opts_.request_timeout);
    if (c.out.size() - c.out_off > opts_.max_output_bytes) {
      spdlog::warn("ctl: client {} (pid {}) does not read its replies: dropped", c.id, c.cred.pid);
      ++counters_.ctl_clients_dropped;
      close_client(c);
      return;
    }
  }
  // The protocol's bound: answer once, then hang up rather than buffer more.
  ++counters_.ctl_clients_dropped;
  ++counters_.ctl_requests_refused;
  c.in.clear();
  c.out += ctl::error_reply(ctl::ErrorCode::kBadRequest,
                            fmt::format("request longer than {} bytes", ctl::kMaxRequestBytes));
  c.close_after_flush = true;
}

void CtlServer::flush(Client& c) {
  while (c.out_off < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_off, c.out.size() - c.out_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      // A subscriber's stream never drains fully for long: drop what was
      // written once it is most of the buffer, so memory stays bounded.
      if (c.out_off > c.out.size() / 2) {
        c.out.erase(0, c.out_off);
        c.out_off = 0;
      }
      return;
    }
    close_client(c);  // EPIPE: the client went away
    return;
  }
  c.out.clear();
  c.out_off = 0;
  if (c.close_after_flush || c.read_closed)
    close_client(c);
}

void CtlServer::publish(const cm::Event& e) noexcept {
  if (monitors_ == 0)
    return;
  try {
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    const std::string line = ctl::event_line(e, wall.count());
    ++counters_.ctl_monitor_events;
    std::vector<Client*> subs;
    for (auto& kv : clients_) {
      if (kv.second->monitor && !kv.second->closed && !kv.second->close_after_flush)
        subs.push_back(kv.second.get());
    }
    for (Client* c : subs) {
      if (c->out.size() - c->out_off + line.size() > opts_.monitor_buffer_bytes) {
        spdlog::warn("ctl: monitor client {} (pid {}) does not read its events: dropped", c->id,
                     c->cred.pid);
        ++counters_.ctl_monitor_dropped;
        close_client(*c);
        continue;
      }
      c->out += line;
      // Written when the socket takes it, from the loop, not from inside the
      // manager's call.
      update_events(*c);
    }
  } catch (const std::exception& ex) {
    spdlog::warn("ctl: monitor event lost: {}", ex.what());
  }
}

void CtlServer::update_events(Client& c) {
  std::uint32_t ev = 0;
  if (!c.read_closed && !c.close_after_flush)
    ev |= EPOLLIN;
  if (c.out_off < c.out.size())
    ev |= EPOLLOUT;
  if (ev == 0) {
    close_client(c);
    return;
  }
  if (int rc = sd_event_source_set_io_events(c.io.get(), ev); rc < 0) {
    spdlog::warn("ctl: sd_event_source_set_io_events: {}", std::strerror(-rc));
    close_client(c);
  }
}

void CtlServer::on_client_timeout(std::uint64_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end() || it->second->closed)
    return;
  ++counters_.ctl_clients_timed_out;
  if (!it->second->heard) {
    ++counters_.ctl_clients_timed_out_idle;
    spdlog::debug("ctl: client {} sent nothing in {:.0f} ms: closed", id,
                  to_ms(std::min(opts_.first_request_timeout, opts_.request_timeout)));
  } else {
    spdlog::debug("ctl: client {} sent no complete request in {:.0f} ms: closed", id,
                  to_ms(opts_.request_timeout));
  }
  close_client(*it->second);
}

void CtlServer::close_client(Client& c) {
  if (c.closed)
    return;
  c.closed = true;
  if (c.monitor)
    --monitors_;
  (void)c.io.set_enabled(SD_EVENT_OFF);
  (void)c.timer.set_enabled(SD_EVENT_OFF);
  auto it = clients_.find(c.id);
  if (it != clients_.end()) {
    closed_.push_back(std::move(it->second));
    clients_.erase(it);
  }
  (void)reaper_.set_enabled(SD_EVENT_ONESHOT);
}

void CtlServer::reap_closed() {
  closed_.clear();
}

}  // namespace rcnet::daemon
