// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once
// Peer proofs (docs/design.md "Trust"): the cluster keys a node holds, and
// the proofs each end of a connection makes and checks. Built on libsodium
// (HMAC-SHA-256: crypto_auth_hmacsha256(3); BLAKE2b: crypto_generichash;
// randombytes_buf; crypto_verify_32, constant time): no primitive of ours.
//
// A proof is HMAC-SHA-256 under the cluster key over the handshake's
// transcript: a label naming the prover's role, the overlay id's hash, the
// REQ's and the REP's fields as wire::encode() writes them (the REP without
// its proof: node ids, incarnations, overlay addresses, capabilities, key
// id, both nonces), then the active and the passive side's underlay
// addresses. Each end computes it from what it sent and what it received,
// so a proof is good for one connection between one pair, in one role.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "auth/key_file.hpp"
#include "util/address.hpp"
#include "wire/private_data.hpp"

namespace rcnet::auth {

// rcnetd.toml auth.mode.
enum class Mode : std::uint8_t {
  kOff,       // no proof offered or asked for: the wire as before kCapAuth
  kOptional,  // a peer that offers no proof is admitted, unproven (counted)
  kRequired,  // a peer without a good proof is refused
};
std::string_view to_string(Mode m);  // "off", "optional", "required"

// One cluster key: its id (1..255, said in the REQ) and its bytes. The
// bytes are wiped when a Key is destroyed or assigned over.
struct Key {
  std::uint8_t id = 0;
  KeyBytes bytes{};
  Key() = default;
  Key(std::uint8_t i, const KeyBytes& b) : id(i), bytes(b) {}
  Key(const Key&) = default;
  Key& operator=(const Key&);
  ~Key();
  // Same id and same bytes (constant time over the bytes).
  bool same(const Key& o) const;
};

using OverlayHash = std::array<std::uint8_t, 32>;
using OverlayTag = std::array<std::uint8_t, wire::kOverlayTagLen>;
using Proof = std::array<std::uint8_t, wire::kProofLen>;

// BLAKE2b-256 of the overlay id (domain-separated); its first
// kOverlayTagLen bytes are the tag said in the REP and the proof message,
// so that a refusal can say "other overlay" rather than "bad proof".
OverlayHash overlay_hash(std::string_view overlay_id);
OverlayTag overlay_tag(const OverlayHash& h);

// What both ends put in the transcript. req and rep as decoded (or as
// sent): their auth fields set; rep.proof is not read.
struct Handshake {
  const OverlayHash* overlay = nullptr;
  const wire::PrivateData* req = nullptr;
  const wire::PrivateData* rep = nullptr;
  IpAddr active_underlay;
  IpAddr passive_underlay;
};

enum class Role : std::uint8_t { kPassive, kActive };

// The proof of `role` under `key` over `h`.
Proof make_proof(const Key& key, Role role, const Handshake& h);
// Whether `proof` is `role`'s proof under `key` over `h` (constant time).
bool check_proof(const Key& key, Role role, const Handshake& h,
                 std::span<const std::uint8_t> proof);

// Fills `out` from the kernel's CSPRNG (randombytes_buf).
void random_bytes(std::span<std::uint8_t> out);

// libsodium's one-time set-up (sodium_init); idempotent, called by every
// function above. false: libsodium cannot run here (no CSPRNG).
bool ready();

}  // namespace rcnet::auth
