// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The cluster key's file (rcnetd.toml(5) [auth]; docs/design.md "Trust"):
// one line, the base64 (RFC 4648, with padding) of kKeyBytes random bytes,
// a trailing newline allowed. Made by
//   (umask 077; head -c 32 /dev/urandom | base64 > /etc/rcnet/cluster.key)
// The key's bytes never reach a log line, an error message, a ctl answer or
// a metric: errors name the path and what is wrong, never the content.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/result.hpp"

namespace rcnet::auth {

inline constexpr std::size_t kKeyBytes = 32;
using KeyBytes = std::array<std::uint8_t, kKeyBytes>;

// `file` as rcnetd reads it: a name without '/' is a systemd credential,
// $CREDENTIALS_DIRECTORY/<file> (LoadCredential=, systemd.exec(5)); any
// other path as written. Without $CREDENTIALS_DIRECTORY a bare name stays
// relative to the working directory.
std::string resolve_key_path(const std::string& file);

// Reads and checks the key file `file` (resolved as above). Errors (EINVAL
// unless the open or stat failed, then its errno), each naming the path:
// missing or unreadable; not a regular file; readable or writable by group
// or others (mode & 077; for a credential, resolved from
// $CREDENTIALS_DIRECTORY, by others only: systemd shows the unit's access as
// group bits there); owned by a user other than root or the caller;
// not the base64 of exactly kKeyBytes bytes. The bytes read are wiped
// (sodium_memzero) on every path.
Result<KeyBytes> read_key_file(const std::string& file);

}  // namespace rcnet::auth
