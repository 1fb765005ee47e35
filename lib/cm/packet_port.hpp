// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The packet port (docs/design.md "Components"): the one interface between
// the TUN side (daemon/tun_path.hpp) and the links. What the TUN side needs
// of the links, and nothing else: route an overlay destination to a peer,
// send (copied or from a lent registered buffer), batch the doorbells of one
// wakeup, the peer's MTU and overlay addresses, and the receive side
// (packets and the capacity signal going up).
//
// Two implementations, chosen once by the daemon:
//   OneRailPort (cm/one_rail_port.hpp): one Manager, a node with one rail
//     (no RailSet runs: its timer and probes cost nothing there);
//   RailSet (cm/rails.hpp): one Manager per rail, a link per rail and peer.
// Whatever stands between the TUN and the links for every packet (the
// capacity join of several rails today; replication of multicast and the
// gate of peer proofs next) lives behind this interface, not in TunPath
// and not in each Manager.
//
// Receive: each rail's Manager delivers into the port (it is the Manager's
// PacketSink: PacketPort::bind_rail), and the port passes the packet to the
// upper sink (TunPath). The capacity signal is joined here: the upper sink
// hears send_capacity(false) when any rail lacks room and (true) once every
// rail has it again (each Manager promises its own true edge).
//
// Ownership: borrows the Managers (each must outlive the port, or be
// unbound by its destructor) and the upper sink (set_upper(); reset it
// before the sink goes). Thread: the loop's; nothing here blocks.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cm/manager.hpp"
#include "util/address.hpp"

namespace rcnet::cm {

// A PacketSink that drops what it is given: a Manager made before its
// packet port binds it delivers here. Static.
PacketSink& null_sink();

// A peer's overlay addresses: tun.address's first family's, then the
// other's (empty when the TUN carries one family, or the peer has none).
using PeerOverlays = std::array<IpAddr, 2>;

// One rail's map between the overlay and its underlay: the config's prefix
// rule for rail k (config::Config::peer_endpoint_for, overlay_for).
struct RailMap {
  // An overlay address (either family) → the peer's underlay endpoint on
  // this rail; nullopt: no peer owns it there (or it is this node).
  std::function<std::optional<Endpoint>(const IpAddr& overlay)> underlay;
  // A peer's underlay address on this rail → its overlay addresses;
  // nullopt: outside the mapping.
  std::function<std::optional<PeerOverlays>(const IpAddr& underlay)> overlays = {};
};

class PacketPort {
 public:
  virtual ~PacketPort();
  PacketPort(const PacketPort&) = delete;
  PacketPort& operator=(const PacketPort&) = delete;

  // --- transmit: TunPath calls these, never from inside a Manager ------------------
  // The peer that owns overlay address `dst` (after the kernel's next hop),
  // as the key for the calls below (opaque to the caller: an underlay
  // endpoint for OneRailPort, the overlay address with port 0 for the
  // RailSet); nullopt: no peer does.
  virtual std::optional<Endpoint> route(const IpAddr& dst) = 0;
  // One frame (ManagerConfig::offload: a vnet header in front) for `peer`
  // (route()'s key). Manager::send's contract; kRefused also when no link
  // can carry it.
  virtual SendResult send(const Endpoint& peer, std::span<const std::byte> frame) = 0;
  // Zero copy (Manager::lend_send_buffer): a free registered send buffer,
  // empty when none is free (the caller then reads into its own and
  // send()s). Every lend ends in send_lent() or return_lent().
  virtual std::span<std::byte> lend_send_buffer() = 0;
  virtual SendResult send_lent(const Endpoint& peer, std::size_t len) = 0;
  virtual void return_lent() = 0;
  // Doorbell batching around one wakeup's reads (Manager::begin_send_batch).
  virtual void begin_send_batch() = 0;
  virtual void end_send_batch() = 0;
  // The MTU (bytes of IP packet) the peer `peer` (route()'s key) told its
  // link; nullopt: no link told it yet.
  virtual std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const = 0;
  // The overlay addresses of the peer a received packet came from
  // (PacketSink::deliver's NodeId); nullopt: unknown.
  virtual std::optional<PeerOverlays> peer_overlays(NodeId peer) const = 0;

  // --- the links as the daemon sees them, every rail together -------------------
  // Connection events of every rail, as they happen (Manager::set_observer's
  // contract; the RailSet sets Event::rail and adds its own).
  virtual void set_observer(EventObserver observer) = 0;
  // The one Manager's snapshot, or the RailSet's merge of every rail's.
  virtual Snapshot snapshot() const = 0;
  // A graceful stop began: links that end now are not failures, sends are
  // refused (each Manager's shutdown() is its owner's call).
  virtual void stopping() = 0;
  // rails.holddown and timeouts.idle after a reload.
  virtual void reconfigure(Duration holddown, Duration idle_timeout) = 0;
  // Starts the links to the peer that owns overlay address `overlay` (on
  // every rail that maps it) without a packet: the peers a restarted
  // rcnetd had (daemon/fd_store.hpp). Manager::ensure_link's contract on
  // each; no-op where no peer owns it.
  virtual void dial(const IpAddr& overlay) = 0;

  // --- receive -------------------------------------------------------------------
  // Where the rails' packets and the joined capacity signal go (TunPath);
  // nullptr: nowhere (a packet delivered then is counted in dropped_early()).
  void set_upper(PacketSink* upper) { upper_ = upper; }
  // Packets delivered while no upper sink was set.
  std::uint64_t dropped_early() const { return dropped_early_; }

 protected:
  // `rails`: how many rails deliver into this port.
  explicit PacketPort(std::size_t rails);
  // Makes this port rail `k`'s PacketSink (Manager::set_sink), and undoes
  // it (unbind_rail, the implementations' destructors).
  void bind_rail(std::size_t k, Manager& m) { m.set_sink(rail_sink(k)); }
  void unbind_rail(Manager& m) { m.set_sink(null_sink()); }
  // What rail k delivers into.
  PacketSink& rail_sink(std::size_t k);

 private:
  class RailSink;
  void deliver(NodeId peer, std::span<const std::byte> packet);
  void capacity(std::size_t rail, bool available);

  PacketSink* upper_ = nullptr;
  std::vector<std::unique_ptr<RailSink>> sinks_;
  std::vector<bool> blocked_;
  std::size_t blocked_count_ = 0;
  std::uint64_t dropped_early_ = 0;
};

}  // namespace rcnet::cm
