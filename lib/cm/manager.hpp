// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The connection manager: peer table, the QP state machine, simultaneous-open
// merge, the teardown pipeline, the reaper, limits, and the data path's
// buffer pools. Driven only by the events it is handed; acts only through the
// rdma::Seam and its TimerService. No fds, no clock reads, no threads.
//
// Ownership: the Manager borrows the Seam, TimerService and PacketSink; they
// must outlive it. Every call happens on the loop's thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/proof.hpp"
#include "cm/events.hpp"
#include "cm/snapshot.hpp"
#include "rdma/seam.hpp"
#include "util/address.hpp"
#include "util/result.hpp"
#include "util/time.hpp"
#include "util/timer_service.hpp"

namespace rcnet::cm {

// Where received packets go (the TUN device in the daemon).
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // One IP packet from `peer`, framed as ManagerConfig::offload says (a
  // virtio_net_hdr in front, or none). The bytes are valid only during the
  // call: the receive buffer is reposted right after it returns.
  virtual void deliver(NodeId peer, std::span<const std::byte> packet) = 0;
  // The one back-pressure channel (docs/design.md "Data path"), edges only: false
  // when a packet had to wait for a send slot or SQ room (it is held in its
  // peer's queue; nothing is lost), true once every waiting peer drained
  // and a slot is free. Called from inside Manager::send() (false) and at the
  // end of any entry point that freed room (true); the manager promises the
  // true edge without being polled. The daemon pauses and resumes reading
  // the TUN device on it.
  virtual void send_capacity(bool available) = 0;
};

// How long past its deadline an attempt waiting for an rdma_cm event
// (resolve, connect_timeout) is kept while events wait unread on our channel
// (Seam::cm_events_queued): a loop that reads rdma::SeamPump::kCmEventBudget
// events per wakeup leaves ESTABLISHED behind a storm's REQs, and the
// deadline is ours, not the peer's. Longer than any backlog measured (lab,
// 1,000 REQs to one hub under TCG: ESTABLISHED read up to 6.5 s after REP),
// shorter than the kernel CM's own bound on a passive id with no RTU (15 REP
// retries, each of 4.096 us x 2^20 with rdma_cm's response timeout of 20:
// about 64 s, then CONNECT_ERROR). A channel that never empties (a loop that
// never catches up) cannot keep an attempt alive past it.
inline constexpr Duration kCmBacklogGrace = 30s;

// How a connection's SENDs say what they carry (docs/design.md "Framing";
// config key transport.framing): kAuto follows the device's profile
// (rdma::ProviderProfile::send_imm); kImmediate and kHeader override a
// provider that says it can when it cannot, or the reverse. Either end
// asking for the header (kCapHeader) makes the connection use it.
enum class Framing : std::uint8_t { kAuto, kImmediate, kHeader };
// "auto", "immediate", "header".
std::string_view to_string(Framing f);

struct ManagerConfig {
  Endpoint local;  // underlay address + port to bind and listen on
  // Peer proofs (docs/design.md "Trust"; rcnetd.toml [auth]): the mode and
  // overlay id from config::Config::auth (manager_for_rail), the keys read
  // from their files by the daemon. Live: reconfigure() tears down each
  // connection proven with a key no longer listed (or whose bytes changed).
  auth::Mode auth_mode = auth::Mode::kOff;
  std::string auth_overlay;
  std::vector<auth::Key> auth_keys;  // the first proves; every one is accepted
  std::uint64_t incarnation = 0;     // nonzero; random per daemon start
  IpAddr overlay;                    // our TUN address, sent in private data
  std::uint32_t mtu = 65520;         // bytes of IP packet; receive buffers are this size
  // GSO frames (docs/design.md "Offloads"; the decision: wire/gso.hpp). When
  // true, every packet handed to send() and to PacketSink::deliver() is a
  // frame, a virtio_net_hdr (wire/vnet_hdr.hpp, 10 bytes, little-endian) then
  // one IP packet, maybe a GSO super-packet of up to wire::kGsoMaxPacket
  // bytes, as a TUN opened with IFF_VNET_HDR reads and writes them. kCapGso
  // is advertised in REQ/REP; a connection whose peer advertises it too
  // carries frames whole, one SEND each; any other gets plain packets
  // (super-packets cut in software, checksums completed). Receive buffers
  // and send slots are then 2 * kVnetHdrLen + max(mtu, kGsoMaxPacket) bytes
  // (one header of headroom, see datapath_recv.cpp). False: plain packets of at
  // most mtu in buffers of mtu bytes.
  // Defaults to false here (config's transport.offload defaults to true).
  bool offload = false;
  // With offload: the TUN took TUN_F_USO4|TUN_F_USO6 (Linux 6.2 and later),
  // so it can be handed UDP GSO frames (VIRTIO_NET_HDR_GSO_UDP_L4).
  // Advertised as kCapUso; a connection whose peer lacks it gets UDP
  // super-packets cut in software (wire/private_data.hpp). Not a config key:
  // the daemon sets it from what the TUN granted.
  bool uso = false;

  bool use_srq = true;
  std::uint32_t srq_size = 512;    // receive buffers on the SRQ (each mtu bytes)
  std::uint32_t srq_limit = 0;     // low watermark; 0 = srq_size / 8
  std::uint32_t rq_depth = 64;     // per-QP receive buffers without SRQ
  std::uint32_t send_slots = 256;  // registered send buffers (each mtu bytes) shared by all QPs
  Framing framing = Framing::kAuto;
  // Receive credits (docs/design.md "Receive credits"), used only on a
  // device without RNR (rdma::ProviderProfile::rnr false, iWARP): receive
  // buffers of the SRQ reserved for each connection, granted to the peer in
  // the private data; the peer never has more SENDs outstanding than that.
  // The SRQ then holds srq_size / credits - 1 connections, and
  // max_connections is lowered to that. At least 4 (a credit is kept for
  // credit updates, and they go out at half a window). Without SRQ the
  // grant is rq_depth.
  std::uint32_t credits = 16;
  // Max outstanding send WRs per QP (ibv_qp_init_attr.cap.max_send_wr).
  // Providers round the SQ up to a power of two past depth + 1 (rxe: 128
  // asks for 129 and maps 256 WQEs of 256 B), so 2^k - 1 uses every entry
  // paid for. 31 from the bandwidth-delay product: in flight per QP are
  // rate x RTT of packets plus the unsignaled run (signal_every) plus the
  // control reserve (2); at the data path's own packet rate (about 1 Mpps
  // per core) and a 5 us fabric RTT that is ~5 + 16 + 2, and one WR carries
  // up to a 64 KiB GSO super-packet (31 of them: 2 MiB in flight). The SQ
  // is then 8 KiB of a QP's memory on rxe (was 64 KiB at 128).
  std::uint32_t qp_send_depth = 31;
  std::uint32_t signal_every = 16;      // selective signalling: 1 signaled send in N
  std::uint32_t peer_queue_depth = 64;  // packets held per peer until ESTABLISHED
  std::uint32_t max_connections = 0;    // 0 = default: 128 without SRQ, 4096 with
  // Admission control (docs/design.md "Admission control"): at most this
  // many passive setups (REQ accepted, ESTABLISHED not yet seen) at a time,
  // a REQ beyond them answered with REJ busy and a retry-after; and at most
  // this many of our own (resolving or REQ sent), the rest waiting in order
  // with their packets queued. 0 = no limit, the default: measured, a
  // limit slowed every storm and rescued none (docs/design.md "Admission
  // control").
  std::uint32_t max_pending_setups = 0;

  // No traffic either way for this long → graceful teardown (DREQ). A
  // connection is reaped when its idle time is in
  //   [idle_timeout, idle_timeout + reaper_interval)
  // plus the loop's wakeup latency (sd-event accuracy, 1 ms in the daemon).
  Duration idle_timeout = 10s;
  Duration last_wqe_timeout = 1s;    // bound of AWAIT_LAST_WQE
  Duration drain_timeout = 1s;       // bound of DRAINING
  Duration disconnect_timeout = 1s;  // bound of DISCONNECTING (waiting for DREP/DISCONNECTED)
  Duration resolve_timeout = 2s;     // rdma_resolve_addr / rdma_resolve_route
  // REQ/REP sent → ESTABLISHED. While rdma_cm events wait unread on the
  // channel when it expires, it is deferred (see kCmBacklogGrace).
  Duration connect_timeout = 5s;
  std::uint32_t connect_retries = 2;  // further attempts after a failed connect
  // Granularity of the reaper, not a period: its wakeups lie on multiples of
  // reaper_interval since the clock's epoch, at the first one at or after
  // the least recently active connection's expiry (so expiries within one
  // interval share a wakeup), and at the first one after an idle QP's SQ
  // tail became unsignaled (its reclaim SEND). No connection, no wakeup.
  Duration reaper_interval = 1s;
  std::uint8_t retry_count = 3;  // RC transport retries (7 = infinite on rxe)
  std::uint8_t rnr_retry_count = 7;
  // Passed to rdma::DeviceConfig at start(); a restart is needed to change
  // them (see there for the encodings). ack_timeout: 4.096 us * 2^value per
  // transport retry, 14 = 67 ms. min_rnr_timer: IB RNR timer code, 12 = 0.64 ms.
  std::uint8_t ack_timeout = 14;
  std::uint8_t min_rnr_timer = 12;

  std::vector<IpPrefix> allowed_peers;  // empty = any; else REQ from outside → REJ not_allowed
  // How many rails this node has (node.address's entries), said in every
  // REQ and REP (wire::PrivateData::rail_count) so that a peer with more
  // rails does not dial ours that do not exist (docs/design.md "Rails").
  // 0 = not said (the daemon always says it: config::Config::manager_for_rail).
  std::uint8_t rail_count = 0;
};

// The memory a manager with `cfg` registers (ibv_reg_mr(3): pinned, and
// counted against RLIMIT_MEMLOCK), in bytes. DataPath sizes its buffers by
// buffer_size(); the start-up log line and `rcnetctl doctor` (its memlock
// check, rcnetctl(8)) read these, so the figure is computed in one place.
// Not counted: the QPs' and CQs' own queues, which hardware providers pin
// too (a few KiB per QP).
struct RegisteredBytes {
  std::uint32_t buffer = 0;      // bytes of each receive buffer and send slot
  std::uint64_t send_slots = 0;  // cfg.send_slots buffers, per manager (rail)
  // With use_srq: the SRQ's srq_size buffers, once per device (rails on
  // ports of one device share them). Without: every connection's own RQ of
  // rq_depth buffers, at max_connections connections (its default if 0).
  std::uint64_t receive = 0;
};
// Bytes of each receive buffer and send slot: the frame header, and with
// offload one virtio_net_hdr of headroom plus a frame of up to
// max(mtu, wire::kGsoMaxPacket); without offload mtu (docs/design.md
// "Offloads").
std::uint32_t buffer_size(const ManagerConfig& cfg);
RegisteredBytes registered_bytes(const ManagerConfig& cfg);

enum class SendResult : std::uint8_t {
  kSent,           // posted on an ESTABLISHED connection (or dropped there, counted:
                   // a super-packet a peer without offload cannot be given)
  kQueued,         // held until the connection is ESTABLISHED (maybe after starting it)
  kDroppedOldest,  // queued, and the oldest queued packet was dropped (counted)
  kOversize,       // larger than mtu, or than kGsoMaxPacket for a super-packet (counted)
  kRefused,        // shutting down, link down, the peer is not allowed, or
                   // (offload) a frame shorter than its vnet header
};

// Why a link (one connection of a peer on one rail) or a whole rail went
// down, as cm/rails.hpp counts failovers (failovers_<to_string(cause)>).
enum class LinkCause : std::uint8_t {
  kPortError,      // IBV_EVENT_PORT_ERR on the rail's device
  kDeviceLost,     // RDMA_CM_EVENT_DEVICE_REMOVAL or IBV_EVENT_DEVICE_FATAL
  kCarrier,        // the rail's netdev lost carrier or the address (rtnetlink)
  kRetryExceeded,  // a send completed with retry exceeded: a silent path
  kPeerNotice,     // the peer said (rail message) its end of the link is down
  kLinkLost,       // the connection failed otherwise (QP fatal, connect failed, ...)
};
// "port_error", "device_lost", "carrier", "retry_exceeded", "peer_notice",
// "link_lost".
std::string_view to_string(LinkCause c);

// Which path noticed a device's loss or its return (docs/design.md "Device
// loss and return"): the verbs/rdma_cm events (DEVICE_REMOVAL,
// IBV_EVENT_DEVICE_FATAL), the RDMA netlink monitor (Linux 6.12+:
// UNREGISTER, REGISTER, NETDEV_ATTACH), or the readopt poll.
enum class DevicePath : std::uint8_t { kAsyncEvent, kNetlinkMonitor, kPoll };
// "async event", "netlink monitor", "poll".
std::string_view to_string(DevicePath p);

// What a RailSet (cm/rails.hpp) hears from each rail's manager. Called
// synchronously from inside the manager's own calls, on the loop's thread:
// an implementation must not call back into the calling manager from there
// (it records, and acts later); calling another manager is allowed.
class RailHooks {
 public:
  virtual ~RailHooks() = default;
  // The in-service connection to `peer` (underlay) went down. `failed`:
  // it ended by a failure (any hard teardown: `cause`, `why`), and then
  // `packets` holds, in order, every data SEND not known complete on it
  // and the packets queued for it, in send()'s format: the manager has
  // given them up (neither dropped nor counted), the hook owns them; the
  // first `in_flight` of them were on the QP, the rest queued.
  // Not failed (idle reap, DREQ, eviction, operator): `packets` is empty.
  virtual void link_down(const Endpoint& peer, bool failed, LinkCause cause, std::string_view why,
                         std::vector<std::vector<std::byte>>& packets, std::size_t in_flight) = 0;
  // A connection to `peer` is ESTABLISHED and in service; `overlay` from
  // its private data; `rails_capable`: it advertised kCapRails;
  // `peer_rail_count`: the rails it said it has (0: not said).
  virtual void link_up(const Endpoint& peer, const IpAddr& overlay, bool rails_capable,
                       std::uint8_t peer_rail_count) = 0;
  // A rail message (wire/rail_message.hpp) from `peer`, bytes valid during
  // the call.
  virtual void rail_message(const Endpoint& peer, std::span<const std::byte> msg) = 0;
  // The rail itself: down on IBV_EVENT_PORT_ERR, link_changed(false) or
  // the device's loss; up on IBV_EVENT_PORT_ACTIVE, link_changed(true) or
  // readopt(). Reported on every change of sends_allowed.
  virtual void rail_changed(bool up, LinkCause cause, std::string_view why) = 0;
};

class Manager final : public rdma::EventSink {
 public:
  Manager(ManagerConfig cfg, rdma::Seam& seam, TimerService& timers, PacketSink& sink);
  ~Manager() override;
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Opens the device through the seam, registers the buffer pools, fills the
  // SRQ. Errors come from the seam (see Seam::open).
  Result<void> start();

  // --- data path --------------------------------------------------------------
  // One IP packet (a frame when cfg.offload) for the peer listening on
  // `peer` (underlay). Starts a connection on demand. Back-pressure is signalled only through
  // PacketSink::send_capacity().
  SendResult send(const Endpoint& peer, std::span<const std::byte> packet);
  // Zero-copy send (docs/design.md "Data path"): lends a free registered send
  // buffer to read the next packet into, so that one which goes out at once
  // is posted from where it was read, without a copy. Empty when no buffer
  // is free, before start(), or when a buffer is not larger than the
  // largest packet send() accepts (offload off: buffers are exactly mtu
  // bytes), so that a read which fills the whole buffer is always oversize.
  // One buffer is lent at a time (asking again returns the same one) until
  // send_lent() or return_lent(); the caller must call one of them before
  // it returns to the event loop.
  std::span<std::byte> lend_send_buffer();
  // send() of the first `len` bytes of the lent buffer (len < its size).
  // Posted from the buffer itself when it can go out at once, whole, on an
  // established connection (offload off, or the peer negotiated it);
  // otherwise copied and handled exactly as send() would. The buffer is no
  // longer lent afterwards. kRefused when nothing is lent.
  SendResult send_lent(const Endpoint& peer, std::size_t len);
  // Gives the lent buffer back unused (nothing read, or nothing to send).
  void return_lent();
  // Doorbell batching (docs/design.md "Data path"): the data SENDs that send()
  // and send_lent() post between begin_send_batch() and the matching
  // end_send_batch() are chained per connection and posted at the end, one
  // ibv_post_send(3) (one doorbell) per connection (counter send_doorbells).
  // Nestable. A packet in a chain is on no SQ yet: the caller ends every
  // batch it began before it returns to the event loop.
  void begin_send_batch();
  void end_send_batch();

  // --- events (rdma::EventSink) ------------------------------------------------
  void on_cm_event(const rdma::CmEvent& ev) override;
  void on_async_event(const rdma::AsyncEvent& ev) override;
  void on_completions(std::span<const rdma::WorkCompletion> wcs) override;
  // The TimerService's deadline passed.
  void on_timer();

  // --- notifications from the daemon -------------------------------------------
  // The underlay neighbour entry of `peer` went FAILED: reap it now, unless
  // the peer was heard from (a receive completion, or its REP or RTU) within
  // `probing`, the longest the failed resolution can have lasted (the
  // kernel's probes x retrans_time, neigh(7) sysctls; the daemon reads
  // them): that resolution then began while the peer answered, typically
  // while the link was down, and its FAILED describes the past. Such a
  // FAILED is counted (neighbour_failed_stale) and a new resolution started
  // (NeighbourOps::use); one that comes after a quiet `probing` reaps.
  void peer_failed(const IpAddr& peer, std::string_view why, Duration probing = Duration::zero());
  // Underlay link down: tear every connection down and refuse new ones;
  // up: accept again.
  void link_changed(bool up);
  // The kernel's neighbour entry (ARP / ND) of a peer's underlay address,
  // which the daemon can touch (rtnetlink) and the manager cannot. Each may
  // be empty (the default: nothing is done).
  struct NeighbourOps {
    // Just before a QP to `peer` is destroyed while the underlay link is
    // down: delete the entry. After a carrier loss the kernel holds what the
    // QP sent since in that entry until resolution fails (3 s with the
    // defaults), and rxe's QP destroy waits for every such packet:
    // measured, the one event loop blocked for up to 2.5 s, every rail's
    // traffic with it (docs/design.md "Rails").
    std::function<void(const IpAddr& peer)> flush;
    // Just before rdma_resolve_addr(3) for `peer`: start resolving the
    // entry (NTF_USE). Where the answer comes back before the kernel queued
    // rdma_cm's request (a veth: at once), rdma_cm misses the update and
    // waits for its whole timeout (timeouts.resolve, 2 s); measured on
    // every other fail-back in the lab.
    std::function<void(const IpAddr& peer)> use;
  };
  void set_neighbour_ops(NeighbourOps ops);
  // Whether the underlay has its carrier right now (the daemon asks the
  // kernel; empty: assumed). Asked when a live QP fails on its own (Last
  // WQE Reached, QP FATAL, a send error): without carrier, that is the
  // cause the link's failover reports (LinkCause::kCarrier), even before
  // the carrier loss's own notice (link_changed) arrives. Measured on Linux
  // 6.12: rxe errored both QPs of a veth whose peer went down before the
  // netlink notice came, and their failovers counted as link_lost.
  void set_carrier_probe(std::function<bool()> has_carrier);

  // --- operator actions ---------------------------------------------------------
  // Graceful teardown of a peer's connection. false if no such peer.
  bool disconnect_peer(NodeId node, std::string_view why);
  // Tears down every connection idle for at least `idle`; returns how many.
  std::size_t reap_idle(Duration idle);
  // Replaces the running configuration with `cfg`, its "0 = default" fields
  // resolved as at construction. `cfg` may differ from config() only in
  // live-changeable settings: signal_every and the fields of the rcnetd.toml
  // keys a reload applies (config::reload() copies exactly those: the key
  // table's Apply::kLive rows). The others were sized or handed to the
  // device by start(); a restart changes them (config::restart_required).
  void reconfigure(const ManagerConfig& cfg);

  // Graceful stop: DREQ every connection, tear every QP down (bounded by the
  // timeouts), refuse new connections. stopped() turns true when no QP and no
  // cm id is left except the listener.
  void shutdown();
  bool stopped() const;

  // --- device loss ----------------------------------------------------------------
  // rdma_cm DEVICE_REMOVAL (of any id) or IBV_EVENT_DEVICE_FATAL: every QP
  // is destroyed at once (no Last WQE or drain wait: counted in
  // forced_destroys), queued packets are dropped (drops_shutting_down), and
  // the timer path then destroys the ids, unregisters the buffers and closes
  // the device (Seam::close_device), so that the kernel can finish removing
  // it (counter device_removals). Sends are refused and counted until
  // readopt() succeeds. false from then until readopt() succeeded.
  bool device_present() const;
  // The kernel says the device is being unregistered (RDMA netlink monitor,
  // UNREGISTER of it): the same release as DEVICE_REMOVAL, at once. The
  // first of the two paths acts (counter device_removals_monitor or
  // device_removals_async); the other, when it comes for the same loss, is
  // counted in device_notices_late and ignored.
  void device_unregistered(std::string_view why);
  // While the device is gone (no-op otherwise): opens the seam on
  // config().local again and restarts the data path as start() does
  // (counter device_readopts, and device_readopts_<path> for `noticed_by`,
  // which the log line names); connections then come back on demand.
  // Errors: EBUSY while the release is still pending, the seam's (ENODEV,
  // EADDRNOTAVAIL: no device owns the address yet), DataPath's (the device
  // is closed again then).
  Result<void> readopt(DevicePath noticed_by = DevicePath::kPoll);

  // --- rails (cm/rails.hpp) --------------------------------------------------------------
  // Hooks of the RailSet over this manager, nullptr = none (the default:
  // a single-rail node keeps today's behaviour: failed links drop their
  // packets). With hooks, REQ and REP advertise kCapRails. Borrowed: must
  // outlive the manager or be reset first.
  void set_rail_hooks(RailHooks* hooks);
  // Where received packets and the capacity edges go from now on (the
  // packet port binds itself here: cm/packet_port.hpp); the constructor's
  // sink until then. Borrowed: must outlive the manager or be replaced.
  void set_sink(PacketSink& sink);
  // A rail message as one SEND (kImmRail) on the ESTABLISHED connection to
  // `peer`. false when there is none, it did not advertise kCapRails, or
  // no send slot or SQ room is free.
  bool send_rail_message(const Endpoint& peer, std::span<const std::byte> msg);
  // Starts a connection to `peer` without a packet when it has none and no
  // retry is pending (a standby link, a fail-back). No-op while sends are
  // not allowed (stopping, link down, device lost). true when this call
  // started an attempt that is still under way when it returns.
  bool ensure_link(const Endpoint& peer);
  // Tears down our own attempt to `peer` that is not ESTABLISHED yet
  // (resolving, or REQ sent and unanswered: rdma_destroy_id(3), which makes
  // the kernel's CM send REJ timeout), reporting a failed link to the rail
  // hooks. A passive setup, a connection in service and one in teardown are
  // left alone. false when there was nothing of ours to abandon.
  bool abandon_attempt(const Endpoint& peer, std::string_view why);
  // The connection to `peer` is ESTABLISHED and in service.
  bool link_established(const Endpoint& peer) const;
  // Tears the connection to `peer` down at once (hard), reporting `cause`
  // to the rail hooks with its unfinished sends (a peer said its end of
  // this link is gone). false when there is none.
  bool link_failed(const Endpoint& peer, LinkCause cause, std::string_view why);

  // Connection events (cm/events.hpp), reported synchronously to `observer`
  // while they happen; empty = none (the default). Replaces any previous one.
  // The observer must not call back into the Manager.
  void set_observer(EventObserver observer);

  // The MTU (bytes of IP packet) the in-service ESTABLISHED connection to
  // `peer` (underlay) learned from the peer's private data; nullopt when
  // there is none.
  std::optional<std::uint32_t> peer_mtu(const Endpoint& peer) const;
  // The underlay endpoint of the peer `node` (PacketSink::deliver's id)
  // while the manager knows it; nullopt otherwise.
  std::optional<Endpoint> peer_underlay(NodeId node) const;

  Snapshot snapshot() const;
  // Snapshot's send_slots_free and send_slots_total alone, without building
  // a Snapshot: cheap enough to read after every packet (the fuzzers do).
  struct SendSlots {
    std::uint32_t free = 0, total = 0;
  };
  SendSlots send_slots() const;
  const Counters& counters() const;
  const ManagerConfig& config() const;
  NodeId node_id() const;

  // For tests and the audit: QPNs the manager currently owns.
  std::vector<rdma::Qpn> live_qpns() const;
  std::size_t live_cm_ids() const;  // not counting the listener

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcnet::cm
