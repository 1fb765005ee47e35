// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-symload: a connection storm into one rcnetd, built the way
// ucmatose's client is, so that the setup-rate row compares two hubs (rcnetd
// against the ucmatose server) and nothing else. rcnet-bench-load runs one
// whole cm::Manager per address (its own PD, completion channel, CQ, SRQ,
// registered buffer pools and rdma_cm event channel, 250 of them per
// process); ucmatose's client has one rdma_cm event channel per process and,
// per connection, a PD, two small CQs and a QP (rdma-core
// librdmacm/examples/cmatose.c). This program has the same shape: one
// process per client node, one event channel, and per address one rdma_cm id,
// one PD, two CQs and one small RC QP, driven by rdma_cm events only (no
// completion channel, no polling while connecting).
//
// What makes it an rcnet peer: each id resolves from its own source address
// (an rcnet node id is its underlay address, rcnet::node_id_for), and its
// REQ carries rcnet's private data (wire::encode: node id, incarnation, MTU,
// no SRQ, overlay address, no capabilities), so the hub takes its ordinary
// passive path: decode, admission, QP on its SRQ, REP. The REP's private
// data is checked (decodes as an rcnet REP from the hub's node id).
//
// Per connection it makes what `ucmatose -C 0`'s client makes: a PD, a send
// and a receive CQ of one entry each, an RC QP, and no memory region. rcnetd
// sends nothing unasked, so no receive is needed. --recvs N posts N receives
// of --mtu bytes first (from a memory region registered per connection, in
// the storm): measured, not the default, because that registration is work
// ucmatose's client does not do (with it, the whole-guest profile of the
// storm had mm_percpu_wq kworkers busy, which ucmatose's storm had not).
//
//   rcnet-bench-symload --peer HUB --addrs A1,...|--addr-file FILE
//                       [--go-file F] [--connect-limit-s S] [--hold-s S]
//                       [--retry-count N] [--recvs N] [--mtu BYTES]
//                       [--done-fifo PATH] [--any-rep] [--summary FILE]
//                       [--auth-key-file F --auth-key-id N --auth-overlay ID]
// --any-rep: the hub is not rcnetd (ucmatose's server, which ignores the
// REQ's private data and sends none in its REP): the same storm from the
// same addresses into the other hub, so that only the hub differs.
// --auth-key-file: each connection proves the cluster key as an rcnet peer
// does (cm/peer_auth.hpp): the REQ offers key id N and a fresh nonce, the
// REP's proof is checked (auth::check_proof; a bad one is counted and fails
// the run), and the first SEND on the QP is the active side's proof
// message (wire/auth_message.hpp; inline, SEND_WITH_IMM kImmAuth, or SEND
// with a frame header on iWARP). A connection counts as proven when that
// SEND completes (the hub's HCA has it); the summary gives the time of the
// last one. The hub verifies the message after that, in its loop: the
// script reads its auth_proven counter.
//   1. creates the event channel and one id per address; prints READY;
//   2. once file F exists: rdma_resolve_addr from every address (2 s, as
//      ucmatose), then rdma_resolve_route, QP, rdma_connect, each on its
//      event; prints ESTABLISHED when every id is ESTABLISHED or failed, or
//      at --connect-limit-s (the same line rcnet-bench-load prints), and
//      writes one line to the FIFO --done-fifo: the script that started the
//      storm blocks in a read of it instead of polling the output with
//      grep, whose fork and exec every 100 ms took CPU from the storm it
//      timed (a TCG guest has two vCPUs);
//   3. holds until --hold-s passes or SIGTERM/SIGINT, answering a DREQ
//      from the hub (counted: the hub dropped a connection);
//   4. rdma_disconnect on every ESTABLISHED id, waits for the DISCONNECTED
//      events (at most 60 s), destroys everything and prints the summary.
// A failed attempt is not retried (as ucmatose): it is counted by its
// event (REJECTED with the REJ's reason, ADDR_ERROR, UNREACHABLE, ...).
// Exit 0 when every id was ESTABLISHED and is still in service at the end
// of the connect phase.
#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/key_file.hpp"
#include "auth/proof.hpp"
#include "common/args.hpp"
#include "common/clock.hpp"
#include "common/report.hpp"
#include "util/address.hpp"
#include "wire/auth_message.hpp"
#include "wire/frame_header.hpp"
#include "wire/immediate.hpp"
#include "wire/private_data.hpp"

using rcnet::IpAddr;
using rcnet::bench::monotonic_s;
using rcnet::bench::realtime_ms;

namespace {

constexpr int kResolveTimeoutMs = 2000;  // ucmatose's, for both resolves
constexpr std::uint16_t kPort = 7471;    // rcnetd's listen port

volatile sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

enum class State : std::uint8_t { kIdle, kResolving, kConnecting, kEstablished, kFailed, kClosed };

// One connection: the rdma_cm id and the verbs objects of its QP. Freed in
// reverse order of creation (QP, MR, CQ, PD, then the id: rdma_destroy_id
// after every device resource, as rdma_destroy_id(3) wants).
struct Conn {
  IpAddr addr;
  sockaddr_in src{};
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* scq = nullptr;
  ibv_cq* rcq = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<std::byte> buf;
  State state = State::kIdle;
  bool disconnected = false;     // DISCONNECTED seen
  rcnet::wire::PrivateData req;  // as sent: the proofs' transcript
  bool proof_posted = false, proof_acked = false;
};

struct Args {
  std::string peer, addrs, addr_file, summary, go_file, done_fifo;
  std::string overlay = "192.0.2.1";  // TEST-NET-1 (RFC 5737), as rcnet-bench-load
  int connect_limit_s = 240, hold_s = 0;
  int retry_count = 7;
  int recvs = 0;
  int mtu = 2048;
  bool any_rep = false;
  std::string auth_key_file, auth_overlay;
  int auth_key_id = 1;
};

void add_options(CLI::App& app, Args& a) {
  app.add_option("--peer", a.peer, "the hub's underlay address")->required();
  app.add_option("--addrs", a.addrs, "local underlay addresses, comma-separated");
  app.add_option("--addr-file", a.addr_file, "more of them, one line each (commas allowed)");
  app.add_option("--overlay", a.overlay, "the overlay address every REQ advertises");
  app.add_option("--go-file", a.go_file, "start once FILE exists");
  app.add_option("--summary", a.summary, "also write the JSON summary to FILE");
  app.add_option("--done-fifo", a.done_fifo, "write a line to this FIFO after the connect phase");
  app.add_flag("--any-rep", a.any_rep,
               "accept a REP without rcnet private data (the hub is ucmatose's server)");
  app.add_option("--auth-key-file", a.auth_key_file,
                 "prove this cluster key (rcnetd.toml auth.keys' file format)");
  app.add_option("--auth-key-id", a.auth_key_id, "the key's id")->check(CLI::Range(1, 255));
  app.add_option("--auth-overlay", a.auth_overlay, "the hub's auth.overlay");
  app.add_option("--connect-limit-s", a.connect_limit_s, "give up connecting after S s")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--hold-s", a.hold_s, "hold the connections S s (0: until SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retry-count", a.retry_count, "RC retry count of the REQ")
      ->check(CLI::Range(0, 7));
  app.add_option("--recvs", a.recvs, "receives posted per QP before its REQ")
      ->check(CLI::Range(0, 64));
  app.add_option("--mtu", a.mtu, "the MTU the REQ advertises (and each receive's size)")
      ->check(CLI::Range(static_cast<int>(rcnet::wire::kMinMtu), 65520));
}

std::vector<std::string> address_texts(const Args& a) {
  std::string all = a.addrs;
  if (!a.addr_file.empty()) {
    std::ifstream f(a.addr_file);
    for (std::string line; std::getline(f, line);)
      all += "," + line;
  }
  std::vector<std::string> texts;
  std::size_t pos = 0;
  while (pos <= all.size()) {
    const auto comma = all.find(',', pos);
    auto item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty())
      texts.push_back(std::move(item));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return texts;
}

sockaddr_in v4(const IpAddr& a, std::uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  s.sin_addr.s_addr = htonl(a.v4_host_order());
  return s;
}

class Storm {
 public:
  // key: the cluster key each connection proves, or nullptr (no proof).
  Storm(const Args& a, const IpAddr& hub, const IpAddr& overlay, const rcnet::auth::Key* key)
      : a_(a),
        hub_(v4(hub, kPort)),
        hub_addr_(hub),
        hub_node_(rcnet::node_id_for(hub)),
        overlay_(overlay),
        key_(key),
        overlay_hash_(rcnet::auth::overlay_hash(a.auth_overlay)) {}

  ~Storm() {
    for (auto& c : conns_)
      destroy(c);
    if (ch_ != nullptr)
      rdma_destroy_event_channel(ch_);
  }

  // The event channel (non-blocking) and one id per address. False on error.
  bool create(const std::vector<std::string>& texts) {
    ch_ = rdma_create_event_channel();
    if (ch_ == nullptr)
      return perr("rdma_create_event_channel");
    const int fl = fcntl(ch_->fd, F_GETFL);
    if (fl < 0 || fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK) != 0)
      return perr("fcntl O_NONBLOCK");
    conns_.resize(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto addr = IpAddr::parse(texts[i]);
      if (!addr || !addr->is_v4()) {
        std::fprintf(stderr, "rcnet-bench-symload: not an IPv4 address: %s\n", texts[i].c_str());
        return false;
      }
      Conn& c = conns_[i];
      c.addr = *addr;
      c.src = v4(*addr, 0);
      if (rdma_create_id(ch_, &c.id, &c, RDMA_PS_TCP) != 0)
        return perr("rdma_create_id");
    }
    return true;
  }

  std::size_t size() const { return conns_.size(); }

  // Every id resolves its address; the rest follows from the events.
  void go() {
    go_s_ = monotonic_s();
    for (auto& c : conns_) {
      sockaddr_in dst = hub_;
      if (rdma_resolve_addr(c.id, reinterpret_cast<sockaddr*>(&c.src),
                            reinterpret_cast<sockaddr*>(&dst), kResolveTimeoutMs) != 0) {
        fail(c, std::string("rdma_resolve_addr: ") + std::strerror(errno));
        continue;
      }
      c.state = State::kResolving;
    }
  }

  // Reads every rdma_cm event waiting, or waits up to `ms` for one (1 ms
  // while a proof's SEND has not completed: its CQ has no channel), then
  // polls the send CQ of each proof posted.
  void pump(int ms) {
    pollfd p{ch_->fd, POLLIN, 0};
    if (poll(&p, 1, proofs_out_.empty() ? ms : std::min(ms, 1)) > 0) {
      rdma_cm_event* ev = nullptr;
      while (rdma_get_cm_event(ch_, &ev) == 0) {
        handle(*ev);
        rdma_ack_cm_event(ev);
      }
    }
    poll_proofs();
  }

  std::size_t settled() const { return established_ + failed_; }
  // Proof messages posted whose SEND has not completed yet.
  std::size_t proofs_out() const { return proofs_out_.size(); }
  std::size_t proofs_acked() const { return proofs_acked_; }
  std::size_t bad_proofs() const { return bad_proofs_; }
  std::int64_t last_proof_realtime() const { return last_proof_realtime_; }
  double last_proof_s() const { return last_proof_s_; }

  // rdma_disconnect on every ESTABLISHED id, then wait (at most 60 s) for
  // their DISCONNECTED events. Returns how many were disconnected.
  std::size_t disconnect_all(double& ms) {
    const double t0 = monotonic_s();
    std::size_t asked = 0;
    for (auto& c : conns_) {
      if (c.state == State::kEstablished && !c.disconnected) {
        rdma_disconnect(c.id);
        ++asked;
      }
    }
    while (monotonic_s() - t0 < 60 && waiting_disconnect() > 0)
      pump(100);
    ms = (monotonic_s() - t0) * 1000;
    return asked - waiting_disconnect();
  }

  std::size_t in_service() const {
    return static_cast<std::size_t>(std::count_if(conns_.begin(), conns_.end(), [](const Conn& c) {
      return c.state == State::kEstablished && !c.disconnected;
    }));
  }

  std::size_t established() const { return established_; }
  std::size_t failed() const { return failed_; }
  std::int64_t last_established_realtime() const { return last_est_realtime_; }
  double go_s() const { return go_s_; }
  double last_established_s() const { return last_est_s_; }
  const std::map<std::string, std::size_t>& failures() const { return failures_; }
  std::size_t remote_disconnects() const { return remote_disconnects_; }
  std::size_t bad_reps() const { return bad_reps_; }

  std::vector<std::string> never_established(std::size_t max) const {
    std::vector<std::string> out;
    for (const auto& c : conns_) {
      if (c.state != State::kEstablished && c.state != State::kClosed && out.size() < max)
        out.push_back(c.addr.to_string());
    }
    return out;
  }

 private:
  static bool perr(const char* what) {
    std::fprintf(stderr, "rcnet-bench-symload: %s: %s\n", what, std::strerror(errno));
    return false;
  }

  std::size_t waiting_disconnect() const {
    return static_cast<std::size_t>(std::count_if(conns_.begin(), conns_.end(), [](const Conn& c) {
      return c.state == State::kEstablished && !c.disconnected;
    }));
  }

  void fail(Conn& c, const std::string& why) {
    if (c.state == State::kFailed || c.state == State::kEstablished)
      return;
    c.state = State::kFailed;
    ++failed_;
    ++failures_[why];
  }

  // What ucmatose's init_node makes with -C 0: a PD, a send and a receive
  // CQ (--recvs entries, at least one), an RC QP; then --recvs receives of
  // --mtu bytes, from a memory region of this connection.
  bool make_qp(Conn& c) {
    c.pd = ibv_alloc_pd(c.id->verbs);
    if (c.pd == nullptr)
      return false;
    const int depth = std::max(a_.recvs, 1);
    c.scq = ibv_create_cq(c.id->verbs, depth, nullptr, nullptr, 0);
    c.rcq = ibv_create_cq(c.id->verbs, depth, nullptr, nullptr, 0);
    if (c.scq == nullptr || c.rcq == nullptr)
      return false;
    ibv_qp_init_attr qa{};
    qa.send_cq = c.scq;
    qa.recv_cq = c.rcq;
    qa.cap.max_send_wr = static_cast<std::uint32_t>(depth);
    qa.cap.max_recv_wr = static_cast<std::uint32_t>(depth);
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (key_ != nullptr)
      qa.cap.max_inline_data = rcnet::wire::kFrameHeaderLen + rcnet::wire::kAuthMsgSize;
    qa.qp_type = IBV_QPT_RC;
    if (rdma_create_qp(c.id, c.pd, &qa) != 0)
      return false;
    if (a_.recvs == 0)
      return true;
    const auto each = static_cast<std::size_t>(a_.mtu);
    c.buf.resize(each * static_cast<std::size_t>(a_.recvs));
    // int, not the enum: the ibv_reg_mr macro masks `access` with an
    // enumerator of another enum type (clang's -Wdeprecated-enum-enum-conversion).
    constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;
    c.mr = ibv_reg_mr(c.pd, c.buf.data(), c.buf.size(), kAccess);
    if (c.mr == nullptr)
      return false;
    for (int k = 0; k < a_.recvs; ++k) {
      ibv_sge sge{};
      sge.addr =
          reinterpret_cast<std::uintptr_t>(c.buf.data() + each * static_cast<std::size_t>(k));
      sge.length = static_cast<std::uint32_t>(each);
      sge.lkey = c.mr->lkey;
      ibv_recv_wr wr{};
      wr.wr_id = static_cast<std::uint64_t>(k);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      if (ibv_post_recv(c.id->qp, &wr, &bad) != 0)
        return false;
    }
    return true;
  }

  // The proof message's SEND completions (IBV_WC_SUCCESS: the hub's HCA
  // acknowledged it). A failed one is a bad proof of this run.
  void poll_proofs() {
    for (std::size_t i = 0; i < proofs_out_.size();) {
      Conn& c = *proofs_out_[i];
      ibv_wc wc{};
      const int n = ibv_poll_cq(c.scq, 1, &wc);
      if (n == 0) {
        ++i;
        continue;
      }
      if (n == 1 && wc.status == IBV_WC_SUCCESS) {
        c.proof_acked = true;
        ++proofs_acked_;
        last_proof_realtime_ = realtime_ms();
        last_proof_s_ = monotonic_s();
      } else {
        ++bad_proofs_;
        ++failures_[n < 0 ? "proof SEND: ibv_poll_cq"
                          : std::string("proof SEND: ") + ibv_wc_status_str(wc.status)];
      }
      proofs_out_[i] = proofs_out_.back();
      proofs_out_.pop_back();
    }
  }

  // The hub's REP proves the key (PeerAuth::check_rep's checks); then our
  // proof goes as the QP's first SEND. False: bad REP proof or post failed.
  bool prove(Conn& c, const rcnet::wire::PrivateData& rep) {
    namespace auth = rcnet::auth;
    const auth::Handshake h{&overlay_hash_, &c.req, &rep, c.addr, hub_addr_};
    if (!rep.auth || rep.key_id != key_->id ||
        rep.overlay_tag != auth::overlay_tag(overlay_hash_) ||
        !auth::check_proof(*key_, auth::Role::kPassive, h, rep.proof)) {
      ++failures_["REP without a good proof"];
      return false;
    }
    rcnet::wire::AuthMsg m;
    m.key_id = key_->id;
    m.overlay_tag = auth::overlay_tag(overlay_hash_);
    m.proof = auth::make_proof(*key_, auth::Role::kActive, h);
    const bool iwarp = c.id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    const auto buf = rcnet::wire::auth_send_payload(m, iwarp);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()),
                static_cast<std::uint32_t>(buf.size()), 0};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = iwarp ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(rcnet::wire::kImmAuth);
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;  // no MR: as few objects as ucmatose
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(c.id->qp, &wr, &bad) != 0) {
      ++failures_[std::string("proof SEND: ibv_post_send: ") + std::strerror(errno)];
      return false;
    }
    c.proof_posted = true;
    proofs_out_.push_back(&c);
    return true;
  }

  void send_req(Conn& c) {
    if (!make_qp(c)) {
      fail(c, std::string("QP setup: ") + std::strerror(errno));
      return;
    }
    rcnet::wire::PrivateData pd;
    pd.kind = rcnet::wire::Kind::kReq;
    pd.node_id = rcnet::node_id_for(c.addr);
    pd.incarnation = (static_cast<std::uint64_t>(realtime_ms()) << 16) ^ c.addr.v4_host_order() ^ 1;
    pd.mtu = static_cast<std::uint32_t>(a_.mtu);
    pd.srq = false;
    pd.overlay = overlay_;
    if (key_ != nullptr) {
      pd.auth = true;
      pd.key_id = key_->id;
      rcnet::auth::random_bytes(std::span(pd.nonce.data(), rcnet::wire::kReqNonceLen));
    }
    c.req = pd;
    const auto bytes = rcnet::wire::encode(pd);
    rdma_conn_param cp{};
    cp.private_data = bytes.data();
    cp.private_data_len = static_cast<std::uint8_t>(bytes.size());
    cp.responder_resources = 0;  // as rcnetd's own REQ: SENDs only
    cp.initiator_depth = 0;
    cp.retry_count = static_cast<std::uint8_t>(a_.retry_count);
    cp.rnr_retry_count = 7;
    if (rdma_connect(c.id, &cp) != 0) {
      fail(c, std::string("rdma_connect: ") + std::strerror(errno));
      return;
    }
    c.state = State::kConnecting;
  }

  void handle(const rdma_cm_event& ev) {
    auto* cp = static_cast<Conn*>(ev.id->context);
    if (cp == nullptr)
      return;
    Conn& c = *cp;
    switch (ev.event) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(c.id, kResolveTimeoutMs) != 0)
          fail(c, std::string("rdma_resolve_route: ") + std::strerror(errno));
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED:
        send_req(c);
        break;
      case RDMA_CM_EVENT_ESTABLISHED: {
        if (c.state != State::kConnecting)
          break;
        const auto* p = static_cast<const std::uint8_t*>(ev.param.conn.private_data);
        const auto d = rcnet::wire::decode(
            std::span<const std::uint8_t>(p, p == nullptr ? 0 : ev.param.conn.private_data_len),
            rcnet::wire::Kind::kRep);
        if (!a_.any_rep && (!d.ok || d.data.node_id != hub_node_))
          ++bad_reps_;  // still a connection; the summary says the hub was not rcnetd-like
        else if (key_ != nullptr && !prove(c, d.data))
          ++bad_proofs_;
        c.state = State::kEstablished;
        ++established_;
        last_est_realtime_ = realtime_ms();
        last_est_s_ = monotonic_s();
        break;
      }
      case RDMA_CM_EVENT_REJECTED: {
        const auto* p = static_cast<const std::uint8_t*>(ev.param.conn.private_data);
        const auto d = rcnet::wire::decode(
            std::span<const std::uint8_t>(p, p == nullptr ? 0 : ev.param.conn.private_data_len),
            rcnet::wire::Kind::kRej);
        fail(c, d.ok ? "REJ " + std::string(rcnet::wire::to_string(d.data.reason))
                     : "REJ without rcnet private data");
        break;
      }
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
        fail(c, std::string(rdma_event_str(ev.event)));
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        if (c.state == State::kEstablished && !c.disconnected) {
          c.disconnected = true;
          if (!local_disconnect_)
            ++remote_disconnects_;
          rdma_disconnect(c.id);  // answer the DREQ (as ucmatose)
        } else if (c.state == State::kConnecting) {
          fail(c, "DISCONNECTED before ESTABLISHED");
        }
        break;
      default:
        break;
    }
  }

  static void destroy(Conn& c) {
    if (c.id != nullptr && c.id->qp != nullptr)
      rdma_destroy_qp(c.id);
    if (c.mr != nullptr)
      ibv_dereg_mr(c.mr);
    if (c.scq != nullptr)
      ibv_destroy_cq(c.scq);
    if (c.rcq != nullptr)
      ibv_destroy_cq(c.rcq);
    if (c.pd != nullptr)
      ibv_dealloc_pd(c.pd);
    if (c.id != nullptr)
      rdma_destroy_id(c.id);
    c = Conn{};
  }

 public:
  bool local_disconnect_ = false;  // set before disconnect_all(): DISCONNECTED is ours

 private:
  const Args& a_;
  sockaddr_in hub_;
  IpAddr hub_addr_;
  rcnet::NodeId hub_node_;
  IpAddr overlay_;
  const rcnet::auth::Key* key_;
  rcnet::auth::OverlayHash overlay_hash_;
  std::vector<Conn*> proofs_out_;  // proof SENDs not completed
  std::size_t proofs_acked_ = 0, bad_proofs_ = 0;
  std::int64_t last_proof_realtime_ = 0;
  double last_proof_s_ = 0;
  rdma_event_channel* ch_ = nullptr;
  std::vector<Conn> conns_;  // sized once: ids hold pointers into it
  std::size_t established_ = 0, failed_ = 0, remote_disconnects_ = 0, bad_reps_ = 0;
  std::int64_t last_est_realtime_ = 0;
  double go_s_ = 0, last_est_s_ = 0;
  std::map<std::string, std::size_t> failures_;
};

// One line into the FIFO `path` (whose reader is already open: O_NONBLOCK
// then fails rather than block when nobody reads).
void notify_done(const std::string& path) {
  if (path.empty())
    return;
  const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "rcnet-bench-symload: %s: %s\n", path.c_str(), std::strerror(errno));
    return;
  }
  if (write(fd, "done\n", 5) != 5)
    std::fprintf(stderr, "rcnet-bench-symload: write %s: %s\n", path.c_str(), std::strerror(errno));
  close(fd);
}

void raise_fd_limit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"rcnet-bench-symload: an rcnet connection storm shaped like ucmatose's client",
               "rcnet-bench-symload"};
  add_options(app, a);
  if (const int rc = rcnet::bench::parse_args(app, argc, argv); rc >= 0)
    return rc;
  const auto texts = address_texts(a);
  const auto hub = IpAddr::parse(a.peer);
  const auto overlay = IpAddr::parse(a.overlay);
  if (!hub || !hub->is_v4() || !overlay || !overlay->is_v4() || texts.empty()) {
    std::fprintf(stderr, "need --peer IPv4, an IPv4 --overlay and --addrs/--addr-file\n");
    return 2;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  raise_fd_limit();

  std::optional<rcnet::auth::Key> key;
  if (!a.auth_key_file.empty()) {
    auto bytes = rcnet::auth::read_key_file(a.auth_key_file);
    if (!bytes) {
      std::fprintf(stderr, "rcnet-bench-symload: %s\n", bytes.error().message().c_str());
      return 2;
    }
    key.emplace(static_cast<std::uint8_t>(a.auth_key_id), *bytes);
  }
  Storm s(a, *hub, *overlay, key ? &*key : nullptr);
  if (!s.create(texts))
    return 1;
  std::printf("READY %zu ids\n", s.size());
  std::fflush(stdout);
  while (!a.go_file.empty() && access(a.go_file.c_str(), F_OK) != 0 && !g_stop)
    usleep(20000);
  const std::int64_t go_realtime = realtime_ms();
  s.go();
  const double limit = s.go_s() + a.connect_limit_s;
  while ((s.settled() < s.size() || s.proofs_out() > 0) && monotonic_s() < limit && !g_stop)
    s.pump(50);
  const double connect_ms =
      ((s.established() ? s.last_established_s() : monotonic_s()) - s.go_s()) * 1000;
  const std::size_t in_service = s.in_service();
  // The line rcnet-bench-load prints (bench.sh reads fields 2, 9, 11, 13).
  std::printf(
      "ESTABLISHED %zu of %zu in %.1f ms go_realtime_ms %lld last_realtime_ms %lld "
      "in_service %zu\n",
      s.established(), s.size(), connect_ms, static_cast<long long>(go_realtime),
      static_cast<long long>(s.last_established_realtime()), in_service);
  if (key)
    std::printf("PROVEN %zu last_realtime_ms %lld bad %zu\n", s.proofs_acked(),
                static_cast<long long>(s.last_proof_realtime()), s.bad_proofs());
  std::string f;
  for (const auto& [why, n] : s.failures())
    f += " " + why + "=" + std::to_string(n);
  std::string nv;
  for (const auto& n : s.never_established(20))
    nv += " " + n;
  std::printf("FAILURES %zu%s\nNEVER_ESTABLISHED%s\n", s.failed(), f.c_str(), nv.c_str());
  std::fflush(stdout);
  notify_done(a.done_fifo);

  const double hold_end = monotonic_s() + a.hold_s;
  while (!g_stop && (a.hold_s == 0 || monotonic_s() < hold_end))
    s.pump(200);
  const std::size_t held = s.in_service();
  s.local_disconnect_ = true;
  double disconnect_ms = 0;
  const std::size_t disconnected = s.disconnect_all(disconnect_ms);

  nlohmann::json j;
  j["ids"] = s.size();
  j["go_realtime_ms"] = go_realtime;
  j["last_established_realtime_ms"] = s.last_established_realtime();
  j["established"] = s.established();
  j["connect_failures"] = s.failed();
  nlohmann::json why = nlohmann::json::object();
  for (const auto& [k, n] : s.failures())
    why[k] = n;
  j["failures"] = why;
  j["in_service_after_connect"] = in_service;
  j["in_service_before_disconnect"] = held;
  j["hub_disconnects"] = s.remote_disconnects();
  j["bad_reps"] = s.bad_reps();
  if (key) {
    j["proofs_acked"] = s.proofs_acked();
    j["bad_proofs"] = s.bad_proofs();
    j["last_proof_realtime_ms"] = s.last_proof_realtime();
  }
  j["connect_ms"] = connect_ms;
  j["disconnect_ms"] = disconnect_ms;
  j["disconnected"] = disconnected;
  const bool ok = s.established() == s.size() && in_service == s.size() && s.bad_reps() == 0 &&
                  s.bad_proofs() == 0 && (!key || s.proofs_acked() == s.size());
  j["ok"] = ok;
  (void)rcnet::bench::print_summary(j, a.summary, -1, "SUMMARY ");
  return ok ? 0 : 1;
}
