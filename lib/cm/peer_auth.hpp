// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// The peer proof of one connection manager (docs/design.md "Trust"): the
// cluster keys, the overlay id, the REQ nonces seen, and the checks each
// step of a handshake makes. Its own state only: Manager::Impl
// (cm/auth_link.cpp) calls it from the handshake's events and acts on its
// verdicts (REJ, teardown, counters, log).
//
// The handshake, with kCapAuth on both ends:
//   1. active:  REQ with its key id and a 6-byte nonce          (offer)
//   2. passive: key id known, nonce not seen before, else REJ  (check_req)
//               unknown_key / replay; REP with a 16-byte nonce
//               and its proof over both                        (answer)
//   3. active:  the REP's proof verifies, else teardown        (check_rep)
//               bad_proof / overlay / no_proof; sends its own
//               proof as its first SEND, then its packets
//   4. passive: the proof verifies, else teardown; only then   (check_msg)
//               are packets delivered or sent
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "auth/proof.hpp"
#include "cm/conn_table.hpp"
#include "cm/manager.hpp"
#include "util/time.hpp"
#include "wire/auth_message.hpp"
#include "wire/private_data.hpp"

namespace rcnet::cm {

enum class Refusal : std::uint8_t {
#define RCNET_X(ctx, enumerator, name, help) enumerator,
  RCNET_AUTH_REFUSALS(RCNET_X, )
#undef RCNET_X
};
std::string_view to_string(Refusal r);  // "no_proof", "bad_proof", ...

// A refusal's counter (Counters::auth_refused_<name>).
std::uint64_t& refused_counter(Counters& c, Refusal r);

class PeerAuth {
 public:
  // REQ nonces remembered (key id and nonce): a REQ that repeats one is a
  // replay. At 1,000 connections a second this is a minute of them.
  static constexpr std::size_t kSeenNonces = 65536;
  // A refusal of one peer is logged at most once per this interval (it is
  // counted every time).
  static constexpr Duration kLogInterval = std::chrono::seconds(60);

  // Takes cfg's mode, overlay id and keys (at start and at each
  // reconfigure). Returns the ids of the keys that were accepted before and
  // are not now, or now hold other bytes: connections proven with them are
  // to go (reason revoked).
  std::vector<std::uint8_t> configure(const ManagerConfig& cfg);
  auth::Mode mode() const { return mode_; }
  // Whether this node offers and asks for proofs (mode not off; a mode
  // other than off always has keys: config::parse refuses it without).
  bool on() const { return mode_ != auth::Mode::kOff && !keys_.empty(); }
  // A key still accepted with these bytes (the revocation check).
  bool accepts(std::uint8_t key_id) const { return find(key_id) != nullptr; }

  // 1. The REQ's auth fields; `c` keeps the handshake.
  void offer(Conn& c, wire::PrivateData& req, const IpAddr& self, const IpAddr& peer);
  // 2. nullopt: go on (answer(), or unproven when the REQ offers no proof
  // and the mode is optional). Else the refusal: kNoProof (required, the
  // peer offers none: REJ not_allowed, a reason every release knows),
  // kUnknownKey, kReplay.
  std::optional<Refusal> check_req(const wire::PrivateData& req);
  // 2. The REP's auth fields and proof for `req` (which offered one); `c`
  // awaits the peer's proof.
  void answer(Conn& c, const wire::PrivateData& req, wire::PrivateData& rep,
              const IpAddr& active_underlay, const IpAddr& self);
  // 3. nullopt: proven (c.auth kProven; c.auth_pending keeps our proof
  // message, msg_due, for the first SEND) or, optional mode and a REP
  // without proof, admitted unproven (the handshake freed).
  std::optional<Refusal> check_rep(Conn& c, const wire::PrivateData& rep);
  // 4. nullopt: proven (c.auth kProven). Frees the handshake either way.
  std::optional<Refusal> check_msg(Conn& c, std::span<const std::byte> msg);

  // Whether a refusal of `peer` is to be logged at `now` (see kLogInterval).
  bool should_log(NodeId peer, TimePoint now);

 private:
  const auth::Key* find(std::uint8_t id) const;
  auth::Handshake handshake(const AuthPending& p) const;

  auth::Mode mode_ = auth::Mode::kOff;
  std::vector<auth::Key> keys_;
  auth::OverlayHash overlay_hash_{};
  auth::OverlayTag overlay_tag_{};
  std::unordered_set<std::uint64_t> seen_;
  std::deque<std::uint64_t> seen_order_;
  std::unordered_map<NodeId, TimePoint> logged_;
};

}  // namespace rcnet::cm
