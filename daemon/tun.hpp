// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The TUN device rcnetd carries IP packets through (Documentation/networking/
// tuntap.rst). Opened with IFF_TUN|IFF_NO_PI: every read(2) returns one IP
// packet starting at its IP header, every write(2) injects one.
//
// With offload (transport.offload), also IFF_VNET_HDR: every read and write
// is a frame, a 10-byte virtio_net_hdr (wire/vnet_hdr.hpp; TUNSETVNETHDRSZ,
// TUNSETVNETLE) then the packet, and TUNSETOFFLOAD lets the kernel hand over
// GSO super-packets of up to 64 KiB and packets whose checksum is left to
// the device (drivers/net/tun.c tun_put_user → virtio_net_hdr_from_skb).
//
// What a written frame's header means to the kernel (drivers/net/tun.c
// tun_get_user → include/linux/virtio_net.h virtio_net_hdr_to_skb, 6.1):
//   - VIRTIO_NET_HDR_F_NEEDS_CSUM: skb_partial_csum_set(csum_start,
//     csum_offset), i.e. CHECKSUM_PARTIAL. The stack takes such a packet as
//     verified (skb_csum_unnecessary) and a device that forwards it on
//     completes the checksum. This is what the sending kernel's TCP puts on
//     every TSO packet (only the pseudo-header sum is in the field), so it
//     must be passed through unchanged: dropping the flag would make the
//     receiver verify an incomplete checksum and discard the packet.
//   - gso_type != NONE: gso_size and gso_type are set on the skb, with
//     SKB_GSO_DODGY (headers not trusted, re-validated on segmentation);
//     TCP receives it as one large segment, forwarding re-segments it.
//   - VIRTIO_NET_HDR_F_DATA_VALID is not looked at on this path (only a
//     virtio NIC's receive path honours it), so it cannot save the receiver
//     a checksum and rcnet does not set it; it is passed through as it came.
//   - A header the kernel refuses (csum_start/offset outside the packet, an
//     unknown gso_type, gso_size 0) fails the write(2) with EINVAL
//     (rx_frame_errors), counted by the data path as drops_tun_write.
// Nothing computes a checksum between the two kernels: RC's ICRC and the
// per-hop link CRCs protect the bytes end to end.
//
// The device may be moved into a named network namespace after creation; its
// fd keeps working there (docs/lab.md: each lab node's rc0 must live in a namespace
// of its own). Address, MTU and up are then set with libnl-route in that
// namespace.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "unique_fd.hpp"
#include "util/address.hpp"
#include "util/result.hpp"

struct nl_sock;  // libnl

namespace rcnet::daemon {

class TunDevice {
 public:
  // Opens /dev/net/tun non-blocking and creates (TUNSETIFF) the device `name`
  // (at most IFNAMSIZ-1 bytes; "rc%d" lets the kernel pick the number). The
  // device disappears when the fd is closed. `offload`: IFF_VNET_HDR, header
  // size 10, little-endian, and TUNSETOFFLOAD with TUN_F_CSUM, TSO4, TSO6,
  // TSO_ECN and USO4|USO6, or without USO where the kernel refuses it
  // (EINVAL before Linux 6.2); offloads() says what was enabled. `netns`
  // non-empty: the device is created inside /run/netns/<netns> (the fd is
  // opened there, after setns(2), and a TUN is born in its fd's namespace),
  // so the name is only ever taken in that namespace: daemons of one host
  // that all call their device rc0 cannot collide (they did while creating
  // it in the shared namespace and moving it). Later configure() calls act
  // there. Errors: open(2), setns(2) (EPERM without CAP_SYS_ADMIN), ioctl(2)
  // (EPERM without CAP_NET_ADMIN, EBUSY when the name is taken, EINVAL from
  // TUNSETOFFLOAD even without USO).
  static Result<TunDevice> open(const std::string& name, bool offload = false,
                                const std::string& netns = {});
  // Takes over `fd`, the TUN fd of an earlier rcnetd kept in systemd's fd
  // store (fd_store.hpp), and with it the device as it is: its ifindex,
  // addresses, routes. Checks with TUNGETIFF that it is a TUN without
  // packet info named `name` (any name when `name` is a template with
  // '%') and opened with IFF_VNET_HDR exactly when `offload`; then sets
  // O_NONBLOCK and the offloads as open() does. Whether the device is in
  // `netns` is for configure() to find (it looks the name up there).
  // Errors: EINVAL naming what differs (the caller makes a new device),
  // ioctl(2)'s (ENOTTY/EBADFD: not a TUN fd, or one never attached).
  static Result<TunDevice> adopt(UniqueFd fd, const std::string& name, bool offload,
                                 const std::string& netns = {});

  // Sets `addresses` (tun.address: one, or one per family; each prefix
  // length is that family's on-link subnet; IPv6 ones with IFA_F_NODAD),
  // the MTU in bytes, IFF_UP and IPv4 accept_local (ip-sysctl.rst: the
  // ICMP errors TunPath writes come from our own address), and, before IFF_UP,
  // IPv6 addr_gen_mode none (rtnetlink IFLA_INET6_ADDR_GEN_MODE: no
  // link-local address, hence no router solicitations; a kernel that
  // refuses it is logged, not an error), in the device's namespace.
  // An address that is already present is not an error. `gso_max_segs`
  // non-zero: the kernel builds no GSO super-packet of more segments
  // (IFLA_GSO_MAX_SEGS, rtnetlink(7)); a peer without offload takes one
  // SEND per segment, all of them in its SQ at once, so a larger one would
  // be dropped (drops_gso_to_legacy_peer). A kernel that refuses it is
  // logged, not an error.
  Result<void> configure(std::span<const IpPrefix> addresses, std::uint32_t mtu,
                         std::uint32_t gso_max_segs = 0);
  // One address.
  Result<void> configure(const IpPrefix& address, std::uint32_t mtu,
                         std::uint32_t gso_max_segs = 0) {
    return configure(std::span(&address, 1), mtu, gso_max_segs);
  }

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
  // Bytes of virtio_net_hdr in front of every packet read or written: 0 or 10.
  std::size_t vnet_hdr_len() const { return vnet_hdr_len_; }
  // The offloads enabled, e.g. "csum tso4 tso6 tso_ecn"; "none" without.
  const std::string& offloads() const { return offloads_; }
  // The kernel granted TUN_F_USO4|TUN_F_USO6: the TUN reads and takes UDP
  // GSO frames (cm::ManagerConfig::uso).
  bool uso() const { return uso_; }
  // Made by adopt(): the device, its ifindex and addresses predate us.
  bool adopted() const { return adopted_; }

 private:
  TunDevice(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  // Removes the IPv4 and IPv6 addresses of `ifindex` that are not in
  // `addresses` (link-local ones stay): an adopted device keeps what the
  // last rcnetd set, and tun.address may have changed since.
  static Result<void> prune_addresses(nl_sock* sock, int ifindex,
                                      std::span<const IpPrefix> addresses,
                                      const std::string& where);
  // What open() and adopt() do once the fd is attached to its device.
  static Result<TunDevice> finish(UniqueFd fd, std::string name, bool offload,
                                  const std::string& netns);
  UniqueFd fd_;
  std::string name_;
  std::string netns_;
  std::size_t vnet_hdr_len_ = 0;
  std::string offloads_ = "none";
  bool uso_ = false;
  bool adopted_ = false;  // adopt(): configure() also prunes addresses
};

}  // namespace rcnet::daemon
