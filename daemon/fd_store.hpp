// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// systemd's file descriptor store (sd_pid_notify_with_fds(3) "FDSTORE=1",
// systemd.service(5) FileDescriptorStoreMax=): rcnetd keeps rc0's TUN fd
// there, so that the kernel object outlives the process. systemd holds a
// copy of the fd while the unit is restarted (systemctl restart, a package
// upgrade, Restart= after a crash or SIGKILL) and hands it back to the next
// rcnetd in LISTEN_FDS/LISTEN_FDNAMES (sd_listen_fds_with_names(3)); the
// TUN, and with it rc0's ifindex, addresses, routes and neighbour entries,
// is never deleted. A stop releases the store (systemd 252; from 254,
// FileDescriptorStorePreserve=no, the default "restart", says the same), and
// the kernel deletes rc0 as it did before. Outside systemd (no
// NOTIFY_SOCKET) nothing is stored and nothing is passed: rc0 lives as long
// as the process, as before (rcnetd(8) "RESTARTS").
#include <map>
#include <string>
#include <string_view>

#include "unique_fd.hpp"

namespace rcnet::daemon {

// The fd name rc0's TUN is stored under (FDNAME=).
inline constexpr std::string_view kTunFdName = "tun";
// A memfd with the overlay address of each peer this rcnetd has a link
// with, one per line (text): the next rcnetd dials them at once.
inline constexpr std::string_view kPeersFdName = "peers";

class FdStore {
 public:
  // Takes the fds systemd passed to this process (sd_listen_fds_with_names,
  // the environment unset), each marked close-on-exec, by name. An fd whose
  // name nobody asks for is closed when the FdStore is.
  static FdStore from_environment();

  // The fd stored as `name`, now owned by the caller; an empty UniqueFd if
  // none was passed.
  UniqueFd take(std::string_view name);
  // How many fds systemd passed (all names).
  std::size_t passed() const { return passed_; }

  // Hands a copy of `fd` to systemd as `name` (replacing one stored under
  // that name: the caller removes it first). False when nothing was sent:
  // no NOTIFY_SOCKET (not under systemd), or the send failed (errno).
  // systemd refuses it, with a journal line of its own, when the unit has
  // no FileDescriptorStoreMax=.
  static bool store(int fd, std::string_view name);
  // Asks systemd to close its copy stored as `name` (FDSTOREREMOVE=1).
  static void remove(std::string_view name);

 private:
  std::map<std::string, UniqueFd, std::less<>> fds_;
  std::size_t passed_ = 0;
};

}  // namespace rcnet::daemon
