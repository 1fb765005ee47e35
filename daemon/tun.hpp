// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The TUN device rcnetd carries IP packets through (Documentation/networking/
// tuntap.rst). Opened with IFF_TUN|IFF_NO_PI: every read(2) returns one IP
// packet starting at its IP header, every write(2) injects one.
//
// The device may be moved into a named network namespace after creation; its
// fd keeps working there (LAB.md: each lab node's rc0 must live in a namespace
// of its own). Address, MTU and up are then set with libnl-route in that
// namespace.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "unique_fd.hpp"
#include "util/address.hpp"
#include "util/result.hpp"

namespace rcnet::daemon {

class TunDevice {
 public:
  // Opens /dev/net/tun non-blocking and creates (TUNSETIFF) the device `name`
  // (at most IFNAMSIZ-1 bytes; "rc%d" lets the kernel pick the number). The
  // device disappears when the fd is closed. Errors: open(2), ioctl(2)
  // (EPERM without CAP_NET_ADMIN, EBUSY when the name is taken).
  static Result<TunDevice> open(const std::string& name);

  // Moves the device into /run/netns/<netns> (RTM_NEWLINK with
  // IFLA_NET_NS_FD). Later configure() calls act there.
  Result<void> move_to_netns(const std::string& netns);

  // Sets `address` (the prefix length is the on-link subnet), the MTU in
  // bytes, and IFF_UP, in the device's namespace. An address that is already
  // present is not an error.
  Result<void> configure(const IpPrefix& address, std::uint32_t mtu);

  // One packet into `buf`; returns its length in bytes. EAGAIN when no packet
  // is waiting. A packet longer than `buf` is truncated by the kernel: size
  // `buf` for the MTU.
  Result<std::size_t> read(std::span<std::byte> buf);
  // One packet out. EAGAIN/ENOBUFS when the device queue is full (the caller
  // drops and counts), EIO when the device is down.
  Result<void> write(std::span<const std::byte> packet);

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }
  const std::string& netns() const { return netns_; }  // empty: the daemon's own

 private:
  TunDevice(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  UniqueFd fd_;
  std::string name_;
  std::string netns_;
};

}  // namespace rcnet::daemon
