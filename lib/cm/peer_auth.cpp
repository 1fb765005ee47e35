// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "cm/peer_auth.hpp"

#include <algorithm>
#include <memory>

namespace rcnet::cm {

std::string_view to_string(Refusal r) {
  switch (r) {
#define RCNET_X(ctx, enumerator, name, help) \
  case Refusal::enumerator:                  \
    return #name;
    RCNET_AUTH_REFUSALS(RCNET_X, )
#undef RCNET_X
  }
  return "unknown";
}

std::uint64_t& refused_counter(Counters& c, Refusal r) {
  switch (r) {
#define RCNET_X(ctx, enumerator, name, help) \
  case Refusal::enumerator:                  \
    return c.auth_refused_##name;
    RCNET_AUTH_REFUSALS(RCNET_X, )
#undef RCNET_X
  }
  return c.auth_refused_bad_proof;
}

std::string_view to_string(AuthState s) {
  switch (s) {
    case AuthState::kOff:
      return "off";
    case AuthState::kAwaiting:
      return "awaiting";
    case AuthState::kProven:
      return "proven";
    case AuthState::kUnproven:
      return "unproven";
  }
  return "unknown";
}

std::vector<std::uint8_t> PeerAuth::configure(const ManagerConfig& cfg) {
  std::vector<std::uint8_t> gone;
  for (const auth::Key& k : keys_) {
    const auto it = std::find_if(cfg.auth_keys.begin(), cfg.auth_keys.end(),
                                 [&](const auth::Key& n) { return n.id == k.id; });
    if (it == cfg.auth_keys.end() || !it->same(k))
      gone.push_back(k.id);
  }
  mode_ = cfg.auth_mode;
  keys_ = cfg.auth_keys;
  overlay_hash_ = auth::overlay_hash(cfg.auth_overlay);
  overlay_tag_ = auth::overlay_tag(overlay_hash_);
  return gone;
}

const auth::Key* PeerAuth::find(std::uint8_t id) const {
  const auto it =
      std::find_if(keys_.begin(), keys_.end(), [&](const auth::Key& k) { return k.id == id; });
  return it == keys_.end() ? nullptr : &*it;
}

auth::Handshake PeerAuth::handshake(const AuthPending& p) const {
  return auth::Handshake{&overlay_hash_, &p.req, &p.rep, p.active_underlay, p.passive_underlay};
}

void PeerAuth::offer(Conn& c, wire::PrivateData& req, const IpAddr& self, const IpAddr& peer) {
  req.auth = true;
  req.key_id = keys_.front().id;
  req.nonce = {};
  auth::random_bytes(std::span(req.nonce.data(), wire::kReqNonceLen));
  c.auth_pending = std::make_unique<AuthPending>(AuthPending{req, {}, self, peer});
}

std::optional<Refusal> PeerAuth::check_req(const wire::PrivateData& req) {
  if (!req.auth) {
    if (mode_ == auth::Mode::kRequired)
      return Refusal::kNoProof;
    return std::nullopt;
  }
  if (find(req.key_id) == nullptr)
    return Refusal::kUnknownKey;
  std::uint64_t tag = req.key_id;
  for (std::size_t i = 0; i < wire::kReqNonceLen; ++i)
    tag = tag << 8 | req.nonce[i];
  if (!seen_.insert(tag).second)
    return Refusal::kReplay;
  seen_order_.push_back(tag);
  if (seen_order_.size() > kSeenNonces) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
  return std::nullopt;
}

void PeerAuth::answer(Conn& c, const wire::PrivateData& req, wire::PrivateData& rep,
                      const IpAddr& active_underlay, const IpAddr& self) {
  rep.auth = true;
  rep.key_id = req.key_id;
  rep.overlay_tag = overlay_tag_;
  auth::random_bytes(rep.nonce);
  auto p = std::make_unique<AuthPending>(AuthPending{req, rep, active_underlay, self});
  rep.proof = auth::make_proof(*find(req.key_id), auth::Role::kPassive, handshake(*p));
  c.auth = AuthState::kAwaiting;
  c.auth_key_id = req.key_id;
  c.auth_pending = std::move(p);
}

std::optional<Refusal> PeerAuth::check_rep(Conn& c, const wire::PrivateData& rep) {
  std::unique_ptr<AuthPending> p = std::move(c.auth_pending);
  if (p == nullptr)
    return std::nullopt;  // we offered nothing (auth was off when the REQ went)
  if (!rep.auth) {
    if (mode_ == auth::Mode::kRequired)
      return Refusal::kNoProof;
    c.auth = AuthState::kUnproven;
    return std::nullopt;
  }
  if (rep.key_id != p->req.key_id)
    return Refusal::kBadProof;
  if (rep.overlay_tag != overlay_tag_)
    return Refusal::kOverlay;
  const auth::Key* key = find(rep.key_id);
  if (key == nullptr)
    return Refusal::kRevoked;  // removed by a reload while the REQ was out
  p->rep = rep;
  const auth::Handshake h = handshake(*p);
  if (!auth::check_proof(*key, auth::Role::kPassive, h, rep.proof))
    return Refusal::kBadProof;
  wire::AuthMsg m;
  m.key_id = key->id;
  m.overlay_tag = overlay_tag_;
  m.proof = auth::make_proof(*key, auth::Role::kActive, h);
  p->msg = wire::encode_auth_msg(m);
  p->msg_due = true;
  c.auth = AuthState::kProven;
  c.auth_key_id = key->id;
  c.auth_pending = std::move(p);
  return std::nullopt;
}

std::optional<Refusal> PeerAuth::check_msg(Conn& c, std::span<const std::byte> msg) {
  std::unique_ptr<AuthPending> p = std::move(c.auth_pending);
  if (p == nullptr)
    return Refusal::kBadProof;
  const auto m = wire::decode_auth_msg(msg);
  if (!m || m->key_id != p->req.key_id)
    return Refusal::kBadProof;
  if (m->overlay_tag != overlay_tag_)
    return Refusal::kOverlay;
  const auth::Key* key = find(m->key_id);
  if (key == nullptr)
    return Refusal::kRevoked;
  if (!auth::check_proof(*key, auth::Role::kActive, handshake(*p), m->proof))
    return Refusal::kBadProof;
  c.auth = AuthState::kProven;
  c.auth_key_id = key->id;
  return std::nullopt;
}

bool PeerAuth::should_log(NodeId peer, TimePoint now) {
  if (logged_.size() > kSeenNonces)
    logged_.clear();  // bounded: a flood of node ids forgets, it does not grow
  auto [it, fresh] = logged_.try_emplace(peer, now);
  if (fresh)
    return true;
  if (now - it->second < kLogInterval)
    return false;
  it->second = now;
  return true;
}

}  // namespace rcnet::cm
