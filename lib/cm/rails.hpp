// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Rails (docs/design.md "Rails"): a node with more than one underlay address,
// each on its own RDMA device port, runs one cm::Manager per rail (its own
// device context, PD, CQ, SRQ, buffers, listener and rdma_cm channel, all
// on the one event loop). A peer has one link, an RC connection, per rail,
// paired by rail index: our rail k talks to the peer's rail k. The RailSet
// stands between the TUN device and those managers and decides, per peer,
// which link carries its traffic:
//
//   active-backup (the default): the lowest rail that is up and whose link
//     to the peer is ESTABLISHED and not failed; the other links stand by,
//     made on demand like the first and kept alive by a probe (a rail
//     message) once a second while the peer has traffic, so a failover needs
//     no handshake and a silently broken standby is found before it is
//     needed.
//   stripe: flows hashed by their addresses and ports over the peer's
//     usable ESTABLISHED links; one flow's packets stay on one link, in order.
//
// A link fails by its rail's IBV_EVENT_PORT_ERR, device loss, carrier or
// address loss (the daemon's netlink), a retry-exceeded send completion
// (a silent path), a rail message from the peer saying its end went down,
// or any other hard teardown. Its manager then hands over every data SEND
// not known complete and the packets queued for it (Manager's RailHooks);
// they are sent again on the peer's next link, in order, ahead of any newer
// packet (a duplicate is possible and harmless to IP: failover_resent counts
// them). The peer is told over the surviving link (kCapRails peers only),
// so that it moves its direction at once instead of waiting for its own RC
// retries.
//
// A rail that recovers waits `holddown` before it carries traffic again;
// each failure within kFlapMemory of the last doubles it (up to 16 x), and
// the memory halves every kFlapMemory without one. Fail-back happens per
// peer once its link on the preferred rail is ESTABLISHED again, so the
// switch itself never waits for a handshake.
//
// Ownership: borrows the managers (each must outlive the RailSet; their
// hooks and observers are reset by its destructor) and the TimerService
// (its own: the RailSet's wakeups, a zero delay for work deferred out of a
// manager's call stack). Thread: the loop's. Nothing here blocks.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cm/events.hpp"
#include "cm/manager.hpp"
#include "cm/packet_port.hpp"
#include "cm/snapshot.hpp"
#include "util/address.hpp"
#include "util/time.hpp"
#include "util/timer_service.hpp"

namespace rcnet::cm {

enum class RailsMode : std::uint8_t { kActiveBackup, kStripe };
// "active-backup", "stripe"
std::string_view to_string(RailsMode m);

// Most rails a node may have (config: node.address holds at most this many).
inline constexpr std::size_t kMaxRails = 8;
// How often standby links are probed.
inline constexpr Duration kProbeInterval = std::chrono::seconds(1);
// A failed link on a rail that is up is dialled again every kRedialInterval
// for its first kFastRedials failures in a row, then after 1 s doubling per
// failure up to kLinkRetryCap. A re-dial that is not ESTABLISHED within
// max(kRedialInterval, its backoff) is abandoned: its REQ was most likely
// lost on the path that failed (a silent drop), and rdma_cm would send it
// again only after its CM response timeout (about 4.3 s: the lab's
// fail-backs after a silent drop took 3.3-4.4 s). So a path that heals is
// used again within about a second, and one that stays dead costs a REQ per
// link every 0.5 s for the first 10 s, then ever fewer.
inline constexpr Duration kRedialInterval = std::chrono::milliseconds(500);
inline constexpr std::uint32_t kFastRedials = 20;
inline constexpr Duration kLinkRetryCap = std::chrono::seconds(30);
// The span over which a rail's failures count as flapping (see above).
inline constexpr Duration kFlapMemory = std::chrono::seconds(60);
// A link the peer declared down (rail message) waits for the peer's "up"
// at most this long (a peer that restarted never sends it).
inline constexpr Duration kPeerHoldMax = std::chrono::seconds(60);

struct RailSetConfig {
  RailsMode mode = RailsMode::kActiveBackup;
  Duration holddown = std::chrono::seconds(5);  // rails.holddown: the base, before flapping
  // A peer with no packet sent for this long gets no standby probes (its
  // links then idle out as any connection does): ManagerConfig::idle_timeout.
  Duration idle_timeout = std::chrono::seconds(10);
};

class RailSet final : public PacketPort {
 public:
  struct Rail {
    Manager* manager = nullptr;  // borrowed; started by its owner
    // The config's mapping for rail k: a peer's overlay address → its
    // underlay endpoint on this rail (nullopt: the peer has no link here),
    // and back.
    RailMap map;
  };

  // `rails`: at least one, at most kMaxRails, rail 0 first. Sets every
  // manager's RailHooks, observer (the RailSet forwards their events with
  // the rail filled in, see set_observer()) and sink (the packet port's
  // receive side: cm/packet_port.hpp).
  RailSet(RailSetConfig cfg, std::vector<Rail> rails, TimerService& timers);
  ~RailSet() override;

  // --- the packet port (cm/packet_port.hpp): the TUN side calls these, never
  // from inside a manager. A peer's key is its overlay address in the first
  // family of tun.address (RailMap::overlays()[0]), port 0.
  // Some rail maps `overlay` to a peer.
  bool maps(const IpAddr& overlay) const;
  std::optional<Endpoint> route(const IpAddr& dst) override;
  // One packet (a frame with offload) for the peer `peer`, on the link the
  // mode picks. kRefused when no rail maps it or no rail is up (counted:
  // failover_no_link).
  SendResult send(const Endpoint& peer, std::span<const std::byte> packet) override;
  // Manager::lend_send_buffer of the rail most peers are carried on; a
  // packet for another rail is copied there by send_lent().
  std::span<std::byte> lend_send_buffer() override;
  SendResult send_lent(const Endpoint& peer, std::size_t len) override;
  void return_lent() override;
  void begin_send_batch() override;
  void end_send_batch() override;
  // The first rail's link to the peer that learned its MTU.
  std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const override;
  std::optional<PeerOverlays> peer_overlays(NodeId peer) const override;

  // The TimerService's deadline passed.
  void on_timer();
  // A graceful stop began: links that end from now on are not failures (no
  // failover, no notice, no probe, nothing counted), and sends are refused.
  void stopping() override;
  // rails.holddown and timeouts.idle after a reload.
  void reconfigure(Duration holddown, Duration idle_timeout) override;
  void dial(const IpAddr& overlay) override;

  // Connection events of every rail's manager (Event::rail set), and the
  // RailSet's own kRail and kFailover. Same contract as
  // Manager::set_observer.
  void set_observer(EventObserver observer) override;

  // Every rail's snapshot merged (QPs and peers tagged with their rail,
  // counters summed, plus the RailSet's own) and the rails filled in.
  Snapshot snapshot() const override;
  std::size_t size() const { return rails_.size(); }
  Manager& manager(std::size_t rail) { return *rails_.at(rail).rail.manager; }
  RailState state(std::size_t rail) const { return rails_.at(rail).state; }
  // The rail carrying `overlay`'s traffic now (active-backup), if any.
  std::optional<std::size_t> carrier(const IpAddr& overlay) const;
  const Counters& counters() const { return ctr_; }

 private:
  class Hooks;
  struct Link {
    Endpoint ep;
    bool routed = false;  // the rail maps the peer (ep valid)
    bool up = false;      // ESTABLISHED and in service
    bool failed = false;  // failed since it was last up: chosen only as a last resort
    // The peer said its rail is down (rail message with a port, carrier or
    // device cause): not used nor dialled until it says the rail is up
    // again, or kPeerHoldMax passed.
    bool held = false;
    TimePoint held_until{};
    // The peer said its end is down (any cause) and has not said "up" nor
    // made the link again: a graceful end of it is a failure too.
    bool peer_down = false;
    bool rails_capable = false;
    TimePoint retry_at{};  // a failed link is tried again from then (redial_tick)
    Duration backoff{};
    std::uint32_t failures = 0;  // in a row, since it was last up
    // A re-dial of this failed link is under way since then (max: none).
    TimePoint dialled_at = TimePoint::max();
  };
  struct PeerLinks {
    IpAddr overlay;
    std::array<Link, kMaxRails> links{};
    int carrier = -1;  // the link carrying traffic (active-backup); -1: none usable
    TimePoint last_tx{};
    // Packets waiting to go out on `carrier`, in order: a failed link's
    // handed-over sends first, then anything sent while they wait.
    std::deque<std::vector<std::byte>> pending;
  };
  struct RailInfo {
    Rail rail;
    std::unique_ptr<Hooks> hooks;
    RailState state = RailState::kUp;
    std::string cause = "started";
    TimePoint since{};
    TimePoint holddown_until = TimePoint::max();
    Duration holddown{};  // what the current (or last) recovery waits
    std::uint32_t flaps = 0;
    TimePoint last_failure{};
    // Peer underlay address on this rail → overlay (links the hooks name).
    std::unordered_map<IpAddr, IpAddr> overlay_of;
  };
  // Work out of a manager's call stack: run by on_timer().
  struct Action {
    enum Kind : std::uint8_t { kDownNotice, kUpNotice, kFailLink } kind;
    IpAddr overlay;
    std::size_t via = 0;    // notices: the rail it goes on; kFailLink: the rail to fail
    std::uint8_t rail = 0;  // notices: the rail it is about
    LinkCause cause = LinkCause::kLinkLost;
  };

  // a's notice (kDownNotice or kUpNotice) on p's link on rail a.via, when
  // that link is up and its peer speaks rail messages; counted when posted.
  // Calls manager a.via: never from inside that manager's own calls.
  bool send_notice(const PeerLinks& p, const Action& a);

  // --- called by Hooks (inside manager `k`'s calls: no call to manager k here) ----
  void link_down(std::size_t k, const Endpoint& peer, bool failed, LinkCause cause,
                 std::string_view why, std::vector<std::vector<std::byte>>& packets,
                 std::size_t in_flight);
  void link_up(std::size_t k, const Endpoint& peer, const IpAddr& overlay, bool capable,
               std::uint8_t peer_rail_count);
  void rail_message(std::size_t k, const Endpoint& peer, std::span<const std::byte> msg);
  void rail_changed(std::size_t k, bool up, LinkCause cause, std::string_view why);

  PeerLinks& peer(const IpAddr& overlay);
  // p's link on rail k from the rail's mapping (routed, ep, overlay_of),
  // when the rail maps p.overlay; left as it is otherwise.
  void route_link(PeerLinks& p, std::size_t k);
  // The known peer of `overlay`, or a new one when a rail maps it; nullptr
  // when none does. One hash lookup for a known peer (the data path).
  PeerLinks* mapped_peer(const IpAddr& overlay);
  PeerLinks* find(std::size_t k, const Endpoint& underlay);
  // Picks p's carrier again; reports a move (failover or failback) with `cause`.
  void choose(PeerLinks& p, std::optional<LinkCause> cause);
  // Carries traffic: its rail up, routed, neither failed nor declared down
  // by the peer (peer_down: until its "up" or the link is made again).
  bool usable(std::size_t k, const Link& l) const {
    return rails_[k].state == RailState::kUp && l.routed && !l.failed && !l.held && !l.peer_down;
  }
  std::size_t stripe_pick(const PeerLinks& p, std::span<const std::byte> packet) const;
  void flush_pending(PeerLinks& p);
  void probe_tick(TimePoint t);
  void redial_tick(TimePoint t);
  // The peer said it has `count` rails: links on rails it lacks are not
  // routed (never dialled), and those it has again are.
  void apply_rail_count(PeerLinks& p, std::uint8_t count);
  void set_rail_state(std::size_t k, RailState s, std::string_view cause);
  void emit_failover(const PeerLinks& p, int from, int to, std::string_view reason,
                     std::string_view cause);
  void wake_now();
  void reschedule();
  std::size_t lender() const;

  RailSetConfig cfg_;
  TimerService& timers_;
  std::vector<RailInfo> rails_;
  std::unordered_map<IpAddr, PeerLinks> peers_;
  std::vector<Action> actions_;
  bool flush_wanted_ = false;
  bool stopping_ = false;
  TimePoint next_probe_ = TimePoint::max();
  TimePoint next_redial_ = TimePoint::max();  // while any link is failed
  std::optional<std::size_t> lent_from_;
  Counters ctr_;  // only the RCNET_RAIL_COUNTERS are counted here
  EventObserver observer_;
};

}  // namespace rcnet::cm
