// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "nl.hpp"

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

namespace rcnet::daemon {

Error nl_error(int nle, const std::string& what) {
  const int code = nle < 0 ? -nle : nle;
  int err = EIO;
  switch (code) {
    case NLE_AGAIN:
      err = EAGAIN;
      break;
    case NLE_NOMEM:
      err = ENOMEM;
      break;
    case NLE_EXIST:
      err = EEXIST;
      break;
    case NLE_INVAL:
      err = EINVAL;
      break;
    case NLE_RANGE:
      err = ERANGE;
      break;
    case NLE_OPNOTSUPP:
      err = EOPNOTSUPP;
      break;
    case NLE_NOADDR:
      err = EADDRNOTAVAIL;
      break;
    case NLE_OBJ_NOTFOUND:
      err = ENOENT;
      break;
    case NLE_NODEV:
      err = ENODEV;
      break;
    case NLE_PERM:
      err = EPERM;
      break;
    case NLE_BUSY:
      err = EBUSY;
      break;
    case NLE_NOACCESS:
      err = EACCES;
      break;
    default:
      break;
  }
  return Error::from_errno(err, what + " (" + nl_geterror(code) + ")");
}

namespace {

// The prefix of every error about a socket of `protocol`.
std::string protocol_name(int protocol) {
  switch (protocol) {
    case NETLINK_ROUTE:
      return "rtnetlink";
    case NETLINK_RDMA:
      return "RDMA netlink";
    default:
      return "netlink protocol " + std::to_string(protocol);
  }
}

// nl_socket_alloc(3) and nl_connect(3), with `on_message` as the NL_CB_VALID
// handler when there is one.
Result<NlSockPtr> alloc_connected(int protocol, const std::string& name,
                                  nl_recvmsg_msg_cb_t on_message, void* arg) {
  NlSockPtr s(nl_socket_alloc());
  if (!s)
    return Error::from_errno(ENOMEM, name + ": nl_socket_alloc");
  if (on_message != nullptr)
    nl_socket_modify_cb(s.get(), NL_CB_VALID, NL_CB_CUSTOM, on_message, arg);
  if (int r = nl_connect(s.get(), protocol); r < 0)
    return nl_error(r, name + ": connect");
  return s;
}

}  // namespace

Result<NlSockPtr> open_request_socket(int protocol, const NlRequestOptions& options) {
  const std::string name = protocol_name(protocol);
  auto s = alloc_connected(protocol, name, nullptr, nullptr);
  if (!s)
    return s;
  if (!options.auto_ack)
    nl_socket_disable_auto_ack(s->get());
  if (options.receive_timeout > Duration::zero()) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(options.receive_timeout).count();
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(us / 1000000);
    tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
    if (::setsockopt(nl_socket_get_fd(s->get()), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
      return Error::from_errno(errno, name + ": SO_RCVTIMEO");
  }
  return s;
}

Result<NlSockPtr> open_notification_socket(const NlSubscription& sub) {
  const std::string name = protocol_name(sub.protocol);
  auto s = alloc_connected(sub.protocol, name, sub.on_message, sub.arg);
  if (!s)
    return s;
  nl_socket_disable_seq_check(s->get());
  for (const NlGroup& g : sub.groups) {
    if (int r = nl_socket_add_membership(s->get(), g.id); r < 0)
      return nl_error(r, name + ": join " + std::string(g.name));
  }
  if (int r = nl_socket_set_nonblocking(s->get()); r < 0)
    return nl_error(r, name + ": non-blocking");
  // Not fatal: a smaller buffer only makes an overflow likelier, and the
  // caller's overflow path (drain_notifications) covers one.
  if (sub.receive_buffer > 0)
    (void)nl_socket_set_buffer_size(s->get(), sub.receive_buffer, 0);
  return s;
}

int drain_notifications(nl_sock* sock, const std::function<void()>& on_overflow) {
  for (int i = 0; i < kDrainBudget; ++i) {
    const int r = nl_recvmsgs_default(sock);
    if (r >= 0)
      continue;
    if (r == -NLE_AGAIN)
      return 0;
    if (r == -NLE_NOMEM) {
      if (on_overflow)
        on_overflow();
      continue;
    }
    return r;
  }
  return 0;
}

std::optional<IpAddr> to_ip(const nl_addr* a) {
  if (a == nullptr)
    return std::nullopt;
  IpAddr out;
  const int fam = nl_addr_get_family(a);
  const unsigned len = nl_addr_get_len(a);
  if (fam == AF_INET && len == 4) {
    out.family = AF_INET;
  } else if (fam == AF_INET6 && len == 16) {
    out.family = AF_INET6;
  } else {
    return std::nullopt;
  }
  const auto* p = static_cast<const std::uint8_t*>(nl_addr_get_binary_addr(a));
  std::copy(p, p + len, out.bytes.begin());
  return out;
}

NlAddrPtr to_nl_addr(const IpAddr& a, unsigned prefix_len) {
  NlAddrPtr n(nl_addr_build(a.family, a.bytes.data(), a.size()));
  if (n)
    nl_addr_set_prefixlen(n.get(), static_cast<int>(prefix_len));
  return n;
}

}  // namespace rcnet::daemon
