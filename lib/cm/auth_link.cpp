// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Manager::Impl's side of the peer proof (cm/peer_auth.hpp has the checks,
// docs/design.md "Trust" the design): what a refusal does to the
// connection and its peer, the passive side's proof message, data that
// came before it, and the revocation a reload asks for.
#include "cm/manager_impl.hpp"

namespace rcnet::cm {

void Manager::Impl::auth_refused(Conn& c, Refusal r, std::string_view detail) {
  ++refused_counter(ctr_, r);
  const std::string why = "auth: " + std::string(to_string(r));
  auto f = fields(c);
  f.reason = why;
  log::event(auth_.should_log(c.peer, now()) ? spdlog::level::warn : spdlog::level::debug, f,
             "peer {} (node {}) refused by the peer proof: {} ({})", c.peer_addr, c.peer,
             to_string(r), detail);
  const bool in_service = c.in_service;
  Peer* p = table_.find_peer(c.peer);
  if (p != nullptr && in_service) {
    p->last_result = why;
    p->last_result_at = now();
  }
  teardown(c, c.state == ConnState::kEstablished ? TeardownKind::kGraceful : TeardownKind::kHard,
           why);
  if (p == nullptr || !in_service || r == Refusal::kRevoked)
    return;  // revoked: the next packet connects again, with a key still accepted
  // The peer's considered answer, as a REJ that is not transient: its
  // packets go, and it is held down (packets wait for one retry later).
  hold_down(*p);
}

void Manager::Impl::auth_message(Conn& c, std::span<const std::byte> msg) {
  if (c.auth != AuthState::kAwaiting) {
    ++ctr_.completions_ignored;  // not asked for (a proven or unproven connection)
    return;
  }
  if (auto r = auth_.check_msg(c, msg)) {
    auth_refused(c, *r, "the active side's proof message");
    return;
  }
  ++ctr_.auth_proven;
  auto f = fields(c);
  log::event(spdlog::level::debug, f, "QPN {} peer {}: proven with key {}", c.qpn, c.peer_addr,
             c.auth_key_id);
  if (c.state == ConnState::kEstablished) {
    table_.set_deadline(c, TimePoint::max());  // the proof's bound (auth_established)
    dp_.auth_released(c);
  }
}

void Manager::Impl::unproven_data(Conn& c) {
  auth_refused(c, Refusal::kNoProof, "data before its proof");
}

void Manager::Impl::auth_unproven(Conn& c) {
  c.auth = AuthState::kUnproven;
  ++ctr_.auth_unproven;
  auto f = fields(c);
  log::event(auth_.should_log(c.peer, now()) ? spdlog::level::warn : spdlog::level::debug, f,
             "peer {} (node {}) offers no proof: admitted unproven (auth.mode optional)",
             c.peer_addr, c.peer);
}

void Manager::Impl::auth_established(Conn& c) {
  if (c.auth != AuthState::kAwaiting)
    return;
  // ESTABLISHED has no bound of its own (cm/lifecycle.hpp): the proof's is
  // timeouts.connect from here; on_deadline() refuses at its end.
  table_.set_deadline(c, now() + cfg_.connect_timeout);
}

bool Manager::Impl::post_auth_proof(Conn& c) {
  if (!c.active || c.auth_pending == nullptr || !c.auth_pending->msg_due)
    return true;
  const bool posted = dp_.post_auth_message(c, c.auth_pending->msg);
  c.auth_pending.reset();
  if (posted)
    return true;
  Peer* p = c.in_service ? table_.find_peer(c.peer) : nullptr;
  teardown(c, TeardownKind::kGraceful, "auth: no send slot for the proof message");
  // A failed attempt: teardown() asks for a new one at once for the queued
  // packets, which would find no room either, and again, without end (the
  // manager fuzzer saw 3,000 connections a second to one peer so). The
  // next one waits out the backoff instead, or the queue goes.
  if (p != nullptr && p->retry_at != TimePoint::max()) {
    if (++p->attempts <= cfg_.connect_retries) {
      retry_later(*p, backoff(p->attempts));
    } else {
      p->attempts = 0;
      drop_queue(*p, ctr_.drops_connect_failed);
    }
  }
  return false;
}

void Manager::Impl::auth_reconfigured(const std::vector<std::uint8_t>& gone) {
  const bool required = auth_.mode() == auth::Mode::kRequired;
  for (Conn* c : table_.all()) {
    if (is_teardown(c->state))
      continue;
    if (c->auth == AuthState::kProven &&
        std::find(gone.begin(), gone.end(), c->auth_key_id) != gone.end()) {
      auth_refused(*c, Refusal::kRevoked, "its key was removed by a reload");
    } else if (required && (c->auth == AuthState::kUnproven || c->auth == AuthState::kOff) &&
               c->state == ConnState::kEstablished) {
      auth_refused(*c, Refusal::kNoProof, "auth.mode is required now");
    }
  }
}

}  // namespace rcnet::cm
