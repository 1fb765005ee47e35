// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A hostile rdma_cm client for the lab: connects to an rcnetd with crafted
// private data and reports what came back, or vanishes mid-handshake. It
// talks to librdmacm directly (rdma_cm(7)), not through rcnet's seam, so that
// rcnetd meets bytes its own code never produces.
//
//   rcnet-hostile-client SRC DST PORT KIND [OVERLAY]
//     KIND: truncated | oversized | wrong-version | wrong-magic | spoofed-node |
//           zero-incarnation | garbage | vanish | auth-replay | auth-proof
//   auth-replay: a REQ that offers a proof (kCapAuth, key id 1) with the
//   same nonce on every run: a recorded REQ. auth-proof: such a REQ with a
//   fresh nonce, then, once ESTABLISHED, a proof message (kImmAuth) that
//   another handshake would have had: a recorded first message. It then
//   waits up to 5 s for the peer to disconnect ("KIND: disconnected").
//   OVERLAY: the overlay id whose tag the proof message carries (default
//   ""), so that only its proof is wrong, as in a recorded one.
//   Prints one line "KIND: rejected reason=<name> status=<n>" (REJ with
//   rcnet private data), "KIND: rejected status=<n>" (without), "KIND:
//   established" or "KIND: vanished", "KIND: error <what>". Exit 0 when the
//   outcome was observed, 1 on a local failure.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "auth/proof.hpp"
#include "util/address.hpp"
#include "wire/auth_message.hpp"
#include "wire/frame_header.hpp"
#include "wire/private_data.hpp"

using namespace rcnet;

namespace {

int fail(const std::string& kind, const std::string& what) {
  std::printf("%s: error %s: %s\n", kind.c_str(), what.c_str(), std::strerror(errno));
  return 1;
}

// Waits for one event of the id's channel (bounded: 5 s).
rdma_cm_event* next_event(rdma_event_channel* ch) {
  pollfd p{ch->fd, POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0)
    return nullptr;
  rdma_cm_event* ev = nullptr;
  return rdma_get_cm_event(ch, &ev) == 0 ? ev : nullptr;
}

std::vector<std::uint8_t> crafted(const std::string& kind, const IpAddr& src) {
  wire::PrivateData pd;
  pd.kind = wire::Kind::kReq;
  pd.node_id = node_id_for(src);
  pd.incarnation = 0x5eed5eed5eed5eedull;
  pd.mtu = 1500;
  std::vector<std::uint8_t> v = wire::encode(pd);
  if (kind == "truncated")
    v.resize(20);  // rdma_cm zero-pads a REQ to 56 bytes: fields read as zero
  else if (kind == "oversized")
    v.assign(56, 0xA5);  // the most a REQ can carry, none of it rcnet's
  else if (kind == "wrong-version")
    v[0] = static_cast<std::uint8_t>(wire::kVersion + 7);
  else if (kind == "wrong-magic")
    v[2] ^= 0xFF;
  else if (kind == "spoofed-node") {
    pd.node_id = node_id_for(src) ^ 0x1;  // another node's id from our address
    auto e2 = wire::encode(pd);
    v.assign(e2.begin(), e2.end());
  } else if (kind == "zero-incarnation") {
    pd.incarnation = 0;
    auto e2 = wire::encode(pd);
    v.assign(e2.begin(), e2.end());
  } else if (kind == "auth-replay" || kind == "auth-proof") {
    pd.auth = true;
    pd.key_id = 1;
    pd.busy = true;
    for (std::size_t i = 0; i < wire::kReqNonceLen; ++i)
      pd.nonce[i] = static_cast<std::uint8_t>(0x52 + i);
    if (kind == "auth-proof") {
      const unsigned seed = static_cast<unsigned>(getpid());
      for (std::size_t i = 0; i < wire::kReqNonceLen; ++i)
        pd.nonce[i] = static_cast<std::uint8_t>(seed >> (i % 4 * 8));
    }
    v = wire::encode(pd);
  } else if (kind == "garbage") {
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<std::uint8_t>(i * 37 + 11);
  }
  return v;
}

// A proof message (wire/auth_message.hpp) whose proof was made for another
// handshake: its bytes are fixed, so every run sends the same recorded one.
// Framed as rcnet frames it: the immediate on InfiniBand and RoCE, the frame
// header on iWARP (wire/frame_header.hpp).
void send_stale_proof(rdma_cm_id* id, const std::string& overlay) {
  wire::AuthMsg m;
  m.key_id = 1;
  m.overlay_tag = auth::overlay_tag(auth::overlay_hash(overlay));
  m.proof.fill(0x5a);
  const bool iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
  static std::vector<std::byte> buf;  // registered below: outlives the SEND
  buf = wire::auth_send_payload(m, iwarp);
  ibv_mr* mr = ibv_reg_mr(id->pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  if (mr == nullptr)
    return;
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), static_cast<std::uint32_t>(buf.size()),
              mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = iwarp ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(wire::kImmAuth);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  (void)ibv_post_send(id->qp, &wr, &bad);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s SRC DST PORT KIND [OVERLAY]\n", argv[0]);
    return 2;
  }
  const std::string kind = argv[4];
  const auto src = IpAddr::parse(argv[1]);
  const auto dst = IpAddr::parse(argv[2]);
  if (!src || !dst || !src->is_v4() || !dst->is_v4()) {
    std::fprintf(stderr, "SRC and DST must be IPv4 addresses\n");
    return 2;
  }
  sockaddr_in s{}, d{};
  s.sin_family = d.sin_family = AF_INET;
  inet_pton(AF_INET, argv[1], &s.sin_addr);
  inet_pton(AF_INET, argv[2], &d.sin_addr);
  d.sin_port = htons(static_cast<std::uint16_t>(std::stoi(argv[3])));

  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr)
    return fail(kind, "rdma_create_event_channel");
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0)
    return fail(kind, "rdma_create_id");
  if (rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&s), reinterpret_cast<sockaddr*>(&d),
                        2000) != 0)
    return fail(kind, "rdma_resolve_addr");
  rdma_cm_event* ev = next_event(ch);
  if (ev == nullptr || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
    return fail(kind, "address resolution");
  rdma_ack_cm_event(ev);
  if (rdma_resolve_route(id, 2000) != 0)
    return fail(kind, "rdma_resolve_route");
  ev = next_event(ch);
  if (ev == nullptr || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
    return fail(kind, "route resolution");
  rdma_ack_cm_event(ev);

  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, nullptr, &qa) != 0)
    return fail(kind, "rdma_create_qp");

  const auto pd = crafted(kind, *src);
  rdma_conn_param cp{};
  cp.private_data = pd.data();
  cp.private_data_len = static_cast<std::uint8_t>(pd.size());
  cp.retry_count = 3;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp) != 0)
    return fail(kind, "rdma_connect");
  if (kind == "vanish") {
    // Gone mid-handshake: the REQ is out, nobody will answer the REP.
    std::printf("%s: vanished\n", kind.c_str());
    std::fflush(stdout);
    _exit(0);
  }
  ev = next_event(ch);
  if (ev == nullptr)
    return fail(kind, "no answer within 5 s");
  int rc = 0;
  if (ev->event == RDMA_CM_EVENT_REJECTED) {
    const auto* p = static_cast<const std::uint8_t*>(ev->param.conn.private_data);
    const auto d2 = wire::decode(std::span(p, ev->param.conn.private_data_len), wire::Kind::kRej);
    if (d2.ok)
      std::printf("%s: rejected reason=%s status=%d\n", kind.c_str(),
                  std::string(wire::to_string(d2.data.reason)).c_str(), ev->status);
    else
      std::printf("%s: rejected status=%d\n", kind.c_str(), ev->status);
  } else if (ev->event == RDMA_CM_EVENT_ESTABLISHED && kind == "auth-proof") {
    std::printf("%s: established\n", kind.c_str());
    rdma_ack_cm_event(ev);
    ev = nullptr;
    send_stale_proof(id, argc > 5 ? argv[5] : "");
    rdma_cm_event* end = next_event(ch);
    if (end != nullptr && end->event == RDMA_CM_EVENT_DISCONNECTED)
      std::printf("%s: disconnected\n", kind.c_str());
    else
      std::printf("%s: still connected after 5 s\n", kind.c_str());
    if (end != nullptr)
      rdma_ack_cm_event(end);
    rdma_disconnect(id);
  } else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
    std::printf("%s: established\n", kind.c_str());
    rdma_ack_cm_event(ev);
    rdma_disconnect(id);
    ev = nullptr;
  } else {
    std::printf("%s: event %s status %d\n", kind.c_str(), rdma_event_str(ev->event), ev->status);
  }
  if (ev != nullptr)
    rdma_ack_cm_event(ev);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return rc;
}
