// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "nl.hpp"

#include <netlink/errno.h>

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

Result<NlSockPtr> open_route_socket() {
  NlSockPtr s(nl_socket_alloc());
  if (!s)
    return Error::from_errno(ENOMEM, "nl_socket_alloc");
  if (int r = nl_connect(s.get(), NETLINK_ROUTE); r < 0)
    return nl_error(r, "nl_connect NETLINK_ROUTE");
  return s;
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
