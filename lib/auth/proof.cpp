// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "auth/proof.hpp"

#include <sodium.h>

#include <cstdlib>

namespace rcnet::auth {

namespace {

// Labels: a proof, its role, the layout's version; a later layout changes them.
constexpr std::string_view kPassiveLabel = "rcnet proof v1 passive";
constexpr std::string_view kActiveLabel = "rcnet proof v1 active";
constexpr std::string_view kOverlayLabel = "rcnet overlay id v1";

void update(crypto_auth_hmacsha256_state& st, std::span<const std::uint8_t> b) {
  crypto_auth_hmacsha256_update(&st, b.data(), b.size());
}
void update(crypto_auth_hmacsha256_state& st, std::string_view s) {
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(s.data()), s.size());
}
void update(crypto_auth_hmacsha256_state& st, const IpAddr& a) {
  const std::uint8_t fam = a.is_v4() ? 4 : a.is_v6() ? 6 : 0;
  update(st, std::span<const std::uint8_t>(&fam, 1));
  update(st, std::span<const std::uint8_t>(a.bytes.data(), a.bytes.size()));
}

}  // namespace

bool ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::kOff:
      return "off";
    case Mode::kOptional:
      return "optional";
    case Mode::kRequired:
      return "required";
  }
  return "unknown";
}

Key& Key::operator=(const Key& o) {
  if (this != &o) {
    sodium_memzero(bytes.data(), bytes.size());
    id = o.id;
    bytes = o.bytes;
  }
  return *this;
}

Key::~Key() {
  sodium_memzero(bytes.data(), bytes.size());
}

bool Key::same(const Key& o) const {
  return id == o.id && sodium_memcmp(bytes.data(), o.bytes.data(), bytes.size()) == 0;
}

OverlayHash overlay_hash(std::string_view overlay_id) {
  (void)ready();
  OverlayHash h{};
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, h.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kOverlayLabel.data()),
                            kOverlayLabel.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(overlay_id.data()),
                            overlay_id.size());
  crypto_generichash_final(&st, h.data(), h.size());
  return h;
}

OverlayTag overlay_tag(const OverlayHash& h) {
  OverlayTag t{};
  std::copy_n(h.begin(), t.size(), t.begin());
  return t;
}

Proof make_proof(const Key& key, Role role, const Handshake& h) {
  (void)ready();
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key.bytes.data(), key.bytes.size());
  update(st, role == Role::kPassive ? kPassiveLabel : kActiveLabel);
  update(st, std::span<const std::uint8_t>(*h.overlay));
  // The REQ and REP as the wire writes them, auth fields included: every
  // field either end said. The REP's proof is zeroed (it is what is made).
  wire::PrivateData req = *h.req;
  req.kind = wire::Kind::kReq;
  req.auth = true;
  update(st, wire::encode(req));
  wire::PrivateData rep = *h.rep;
  rep.kind = wire::Kind::kRep;
  rep.auth = true;
  rep.proof = {};
  update(st, wire::encode(rep));
  update(st, h.active_underlay);
  update(st, h.passive_underlay);
  Proof out{};
  crypto_auth_hmacsha256_final(&st, out.data());
  sodium_memzero(&st, sizeof st);
  return out;
}

bool check_proof(const Key& key, Role role, const Handshake& h,
                 std::span<const std::uint8_t> proof) {
  if (proof.size() != wire::kProofLen)
    return false;
  Proof want = make_proof(key, role, h);
  const bool ok = crypto_verify_32(want.data(), proof.data()) == 0;
  sodium_memzero(want.data(), want.size());
  return ok;
}

void random_bytes(std::span<std::uint8_t> out) {
  if (!ready())
    std::abort();  // no CSPRNG: nothing here may go on without one
  randombytes_buf(out.data(), out.size());
}

}  // namespace rcnet::auth
