// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-bench-inline: what an inline send (IBV_SEND_INLINE) is worth for a
// small packet, in event mode. rcnetd posts SEND_WITH_IMM WRs from registered
// memory, never inline; this decides with a figure whether inline sends would
// change its latency. perftest cannot tell on rdma_rxe ("Device not recognized
// to implement inline feature. Disabling it", even with -I).
//
//   rcnet-bench-inline --server --bind ADDR [--port P]
//   rcnet-bench-inline --client --bind ADDR --connect ADDR [--port P]
//                      [--size 96] [--blocks 40] [--per-block 250] [--json FILE]
//
// librdmacm + libibverbs directly (not the project's seam), single-threaded,
// IPv4. One RC QP per side (rdma_create_qp with cap.max_inline_data >= size;
// the program exits 1 when the provider grants less), one completion channel,
// one CQ for sends and receives, one MR for sends and one for receives. Event
// mode, as rcnetd and `ib_send_lat -e`: the CQ is polled until empty, armed
// (ibv_req_notify_cq), polled again, and only then does the process sleep in
// ibv_get_cq_event (race-free: a CQE that came between the empty poll and the
// arming is found by the second poll).
//
// Client, per round trip: post a receive, read CLOCK_MONOTONIC, post a
// signaled SEND_WITH_IMM of --size bytes (inline or not), wait for both the
// send CQE and the echo's receive CQE, read the clock again. RTT/2 is printed.
// The first payload byte carries the mode (1 inline, 0 not); the server
// echoes every message with the same mode and the same length, copied from its
// receive MR into its send MR. Blocks of --per-block round trips alternate
// (block 0 not inline, block 1 inline, ...) after --warmup round trips of
// each mode, so slow drift of a TCG guest hits both modes alike; besides the
// per-mode medians the figure of merit is the median over block pairs of
// median(inline block) / median(preceding non-inline block).
// A last message with first byte 0xff ends the run: the client disconnects,
// the server sees RDMA_CM_EVENT_DISCONNECTED, and both tear down.
// Exit status 0 on success, 1 on any error (the failing call and errno named).
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/args.hpp"
#include "common/clock.hpp"
#include "common/report.hpp"
#include "common/stats.hpp"
#include "rdma/raii.hpp"

namespace {

constexpr const char* kProg = "rcnet-bench-inline";
constexpr std::uint8_t kModeSend = 0;
constexpr std::uint8_t kModeInline = 1;
constexpr std::uint8_t kModeStop = 0xff;
constexpr std::uint64_t kSendWrId = 1;
constexpr std::uint64_t kRecvWrIdBase = 100;  // + receive slot
constexpr std::uint32_t kRecvSlots = 8;       // server; the client uses slot 0 only
constexpr std::uint32_t kQueueDepth = 16;     // max_send_wr, max_recv_wr; CQ holds both
constexpr int kResolveTimeoutMs = 5000;

[[noreturn]] void fail(const std::string& call, int err) {
  std::fprintf(stderr, "%s: %s: %s (errno %d)\n", kProg, call.c_str(), std::strerror(err), err);
  std::exit(1);
}

[[noreturn]] void fail_msg(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kProg, msg.c_str());
  std::exit(1);
}

// A destroy that fails outside the deleters (lib/rdma/raii.hpp logs its own).
void warn_destroy(const char* call, int err) noexcept {
  std::fprintf(stderr, "%s: %s: %s (errno %d)\n", kProg, call, std::strerror(err), err);
}
// The project's owning types (rdma/raii.hpp): each deleter follows its call's
// error contract and logs a failed destroy.
using rcnet::rdma::CmIdPtr;
using rcnet::rdma::CompChannelPtr;
using rcnet::rdma::CqPtr;
using rcnet::rdma::EventChannelPtr;
using rcnet::rdma::MrPtr;
using rcnet::rdma::PdPtr;
using QpPtr = rcnet::rdma::IdQpPtr;  // owns id->qp, not the id

sockaddr_in parse_v4(const std::string& addr, std::uint16_t port) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  if (inet_pton(AF_INET, addr.c_str(), &sin.sin_addr) != 1)
    fail_msg("not an IPv4 address: " + addr);
  return sin;
}

// Waits for the next rdma_cm event on the channel and checks its type. The
// event is acknowledged before returning except for CONNECT_REQUEST, whose
// new id the caller needs (it acknowledges it after rdma_accept).
rdma_cm_event* expect_cm_event(rdma_event_channel* ec, rdma_cm_event_type want) {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ec, &ev) != 0)
    fail("rdma_get_cm_event", errno);
  if (ev->event != want) {
    const std::string msg = std::string("expected ") + rdma_event_str(want) + ", got " +
                            rdma_event_str(ev->event) + " (status " + std::to_string(ev->status) +
                            ")";
    rdma_ack_cm_event(ev);
    fail_msg(msg);
  }
  if (want == RDMA_CM_EVENT_CONNECT_REQUEST)
    return ev;
  if (rdma_ack_cm_event(ev) != 0)
    fail("rdma_ack_cm_event", errno);
  return nullptr;
}

// Everything verbs on one side. Members are destroyed in reverse order: QP,
// MRs, CQ, completion channel, PD, then the ids and the event channel.
struct Endpoint {
  EventChannelPtr ec;
  CmIdPtr listen_id;  // server only
  CmIdPtr id;         // the connected id
  PdPtr pd;
  CompChannelPtr channel;
  CqPtr cq;
  std::vector<std::uint8_t> send_buf;
  std::vector<std::uint8_t> recv_buf;
  MrPtr send_mr;
  MrPtr recv_mr;
  QpPtr qp;
  std::uint32_t size = 0;  // message bytes; also each receive slot's length
  std::uint32_t max_inline_granted = 0;
  bool armed = false;

  ibv_qp_init_attr qp_attr(std::uint32_t max_inline) const {
    ibv_qp_init_attr attr{};
    attr.send_cq = cq.get();
    attr.recv_cq = cq.get();
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = kQueueDepth;
    attr.cap.max_recv_wr = kQueueDepth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = max_inline;
    return attr;
  }

  // The largest cap.max_inline_data below `refused` for which ibv_create_qp
  // succeeds (binary search; each probe QP is destroyed at once).
  std::uint32_t largest_inline(std::uint32_t refused) const {
    std::uint32_t lo = 0, hi = refused;  // lo accepted (0 always is), hi refused
    while (hi - lo > 1) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      ibv_qp_init_attr attr = qp_attr(mid);
      if (ibv_qp* q = ibv_create_qp(pd.get(), &attr)) {
        if (const int r = ibv_destroy_qp(q); r != 0)
          warn_destroy("ibv_destroy_qp", r);
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  // PD, completion channel, CQ, MRs and the QP on `id`.
  void create_resources(std::uint32_t msg_size) {
    size = msg_size;
    ibv_context* verbs = id->verbs;
    pd.reset(ibv_alloc_pd(verbs));
    if (!pd)
      fail("ibv_alloc_pd", errno);
    channel.reset(ibv_create_comp_channel(verbs));
    if (!channel)
      fail("ibv_create_comp_channel", errno);
    cq.reset(ibv_create_cq(verbs, 2 * kQueueDepth, nullptr, channel.get(), 0));
    if (!cq)
      fail("ibv_create_cq", errno);
    send_buf.assign(size, 0);
    recv_buf.assign(std::size_t{size} * kRecvSlots, 0);
    send_mr.reset(ibv_reg_mr(pd.get(), send_buf.data(), send_buf.size(), 0));
    if (!send_mr)
      fail("ibv_reg_mr (send)", errno);
    // int, not the enum: the ibv_reg_mr macro masks `access` with an
    // enumerator of another enum (clang: -Wdeprecated-enum-enum-conversion).
    constexpr int kRecvAccess = IBV_ACCESS_LOCAL_WRITE;
    recv_mr.reset(ibv_reg_mr(pd.get(), recv_buf.data(), recv_buf.size(), kRecvAccess));
    if (!recv_mr)
      fail("ibv_reg_mr (receive)", errno);
    ibv_qp_init_attr attr = qp_attr(size);
    if (rdma_create_qp(id.get(), pd.get(), &attr) != 0) {
      const int err = errno;
      if (err == EINVAL)
        fail_msg("rdma_create_qp: " + std::string(std::strerror(err)) + " (errno " +
                 std::to_string(err) + "): the provider refuses cap.max_inline_data " +
                 std::to_string(size) + "; the largest it accepts is " +
                 std::to_string(largest_inline(size)));
      fail("rdma_create_qp", err);
    }
    qp.reset(id.get());
    max_inline_granted = attr.cap.max_inline_data;
    std::printf("QP %u: asked max_inline_data %u, granted %u\n", id->qp->qp_num, size,
                max_inline_granted);
    if (max_inline_granted < size)
      fail_msg("the provider granted max_inline_data " + std::to_string(max_inline_granted) +
               " < " + std::to_string(size) + ": no inline sends of this size");
  }

  void post_recv(std::uint32_t slot) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(recv_buf.data() + std::size_t{slot} * size);
    sge.length = size;
    sge.lkey = recv_mr->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = kRecvWrIdBase + slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (const int r = ibv_post_recv(id->qp, &wr, &bad); r != 0)
      fail("ibv_post_recv", r);
  }

  // A signaled SEND_WITH_IMM of `len` bytes from the send MR.
  void post_send(std::uint32_t len, bool inline_data, std::uint32_t imm) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(send_buf.data());
    sge.length = len;
    sge.lkey = send_mr->lkey;
    ibv_send_wr wr{};
    wr.wr_id = kSendWrId;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (inline_data)
      wr.send_flags |= IBV_SEND_INLINE;
    wr.imm_data = htonl(imm);
    ibv_send_wr* bad = nullptr;
    if (const int r = ibv_post_send(id->qp, &wr, &bad); r != 0)
      fail(std::string("ibv_post_send") + (inline_data ? " (inline)" : ""), r);
  }

  // Returns at least one WC in wcs[0..n). Polls until it finds one; when the
  // CQ is empty, arms it and polls once more before sleeping on the channel.
  int wait_wcs(ibv_wc* wcs, int max) {
    for (;;) {
      const int n = ibv_poll_cq(cq.get(), max, wcs);
      if (n < 0)
        fail("ibv_poll_cq", -n);
      if (n > 0)
        return n;
      if (!armed) {
        if (const int r = ibv_req_notify_cq(cq.get(), 0); r != 0)
          fail("ibv_req_notify_cq", r);
        armed = true;
        continue;
      }
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(channel.get(), &ev_cq, &ev_ctx) != 0)
        fail("ibv_get_cq_event", errno);
      ibv_ack_cq_events(ev_cq, 1);
      armed = false;
    }
  }
};

void check_wc(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS)
    fail_msg(std::string("completion error on wr_id ") + std::to_string(wc.wr_id) + ": " +
             ibv_wc_status_str(wc.status) + " (vendor_err " + std::to_string(wc.vendor_err) + ")");
}

int run_server(const std::string& bind, std::uint16_t port) {
  Endpoint ep;
  ep.ec.reset(rdma_create_event_channel());
  if (!ep.ec)
    fail("rdma_create_event_channel", errno);
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ep.ec.get(), &raw, nullptr, RDMA_PS_TCP) != 0)
    fail("rdma_create_id", errno);
  ep.listen_id.reset(raw);
  sockaddr_in sin = parse_v4(bind, port);
  if (rdma_bind_addr(ep.listen_id.get(), reinterpret_cast<sockaddr*>(&sin)) != 0)
    fail("rdma_bind_addr " + bind, errno);
  if (rdma_listen(ep.listen_id.get(), 1) != 0)
    fail("rdma_listen", errno);
  std::printf("listening on %s:%u\n", bind.c_str(), port);
  std::fflush(stdout);

  rdma_cm_event* req = expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_CONNECT_REQUEST);
  ep.id.reset(req->id);
  // The size is the client's: it travels in the REQ's private data.
  std::uint32_t size = 0;
  if (req->param.conn.private_data_len < sizeof size)
    fail_msg("REQ without the message size in its private data");
  std::memcpy(&size, req->param.conn.private_data, sizeof size);
  size = ntohl(size);
  ep.create_resources(size);
  for (std::uint32_t s = 0; s < kRecvSlots; ++s)
    ep.post_recv(s);
  rdma_conn_param param{};
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.rnr_retry_count = 7;
  if (rdma_accept(ep.id.get(), &param) != 0)
    fail("rdma_accept", errno);
  if (rdma_ack_cm_event(req) != 0)
    fail("rdma_ack_cm_event", errno);
  expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_ESTABLISHED);

  std::deque<std::uint32_t> pending;  // receive slots waiting for the send MR
  bool send_busy = false;
  bool stop = false;
  std::uint64_t echoed = 0;
  ibv_wc wcs[kQueueDepth];
  while (!stop) {
    const int n = ep.wait_wcs(wcs, static_cast<int>(kQueueDepth));
    for (int i = 0; i < n; ++i) {
      check_wc(wcs[i]);
      if (wcs[i].wr_id == kSendWrId) {
        send_busy = false;
        continue;
      }
      const auto slot = static_cast<std::uint32_t>(wcs[i].wr_id - kRecvWrIdBase);
      if (wcs[i].byte_len == 0 || wcs[i].byte_len > size)
        fail_msg("bad message length " + std::to_string(wcs[i].byte_len));
      if (ep.recv_buf[std::size_t{slot} * size] == kModeStop) {
        stop = true;
        break;
      }
      pending.push_back(slot);
    }
    // The send MR is reused: echo the next message only when the previous
    // echo's send has completed.
    if (!stop && !send_busy && !pending.empty()) {
      const std::uint32_t slot = pending.front();
      pending.pop_front();
      const std::uint8_t* msg = ep.recv_buf.data() + std::size_t{slot} * size;
      std::memcpy(ep.send_buf.data(), msg, size);
      const bool inline_data = msg[0] == kModeInline;
      ep.post_recv(slot);
      ep.post_send(size, inline_data, static_cast<std::uint32_t>(echoed));
      send_busy = true;
      ++echoed;
    }
  }
  expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_DISCONNECTED);
  if (rdma_disconnect(ep.id.get()) != 0)
    fail("rdma_disconnect", errno);
  std::printf("server: echoed %llu messages, disconnected\n",
              static_cast<unsigned long long>(echoed));
  return 0;
}

struct ClientOpts {
  std::string bind, connect, json;
  std::uint16_t port = 0;
  std::uint32_t size = 96, blocks = 40, per_block = 250, warmup = 100;
};

// The client's side, connected: the REQ carries the message size.
void connect_client(Endpoint& ep, const ClientOpts& o) {
  ep.ec.reset(rdma_create_event_channel());
  if (!ep.ec)
    fail("rdma_create_event_channel", errno);
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ep.ec.get(), &raw, nullptr, RDMA_PS_TCP) != 0)
    fail("rdma_create_id", errno);
  ep.id.reset(raw);
  // The source address must be bound: an unbound connect loops back on the
  // local device in the lab (all nodes share one network namespace).
  sockaddr_in src = parse_v4(o.bind, 0);
  sockaddr_in dst = parse_v4(o.connect, o.port);
  if (rdma_resolve_addr(ep.id.get(), reinterpret_cast<sockaddr*>(&src),
                        reinterpret_cast<sockaddr*>(&dst), kResolveTimeoutMs) != 0)
    fail("rdma_resolve_addr", errno);
  expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_ADDR_RESOLVED);
  if (rdma_resolve_route(ep.id.get(), kResolveTimeoutMs) != 0)
    fail("rdma_resolve_route", errno);
  expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_ROUTE_RESOLVED);
  ep.create_resources(o.size);
  const std::uint32_t size_be = htonl(o.size);
  rdma_conn_param param{};
  param.private_data = &size_be;
  param.private_data_len = sizeof size_be;
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.retry_count = 6;  // 7 is infinite on rxe: a dead server would hang the run
  param.rnr_retry_count = 7;
  if (rdma_connect(ep.id.get(), &param) != 0)
    fail("rdma_connect", errno);
  expect_cm_event(ep.ec.get(), RDMA_CM_EVENT_ESTABLISHED);
  for (std::uint32_t i = 0; i < o.size; ++i)
    ep.send_buf[i] = static_cast<std::uint8_t>(i);
}

// Round trips on a connected client, one at a time.
class Pinger {
 public:
  Pinger(Endpoint& ep, std::uint32_t size) : ep_(ep), size_(size) {}

  // One round trip in `mode`; returns RTT/2 in µs.
  double round_trip(std::uint8_t mode) {
    ep_.send_buf[0] = mode;
    ep_.post_recv(0);
    const std::int64_t t0 = rcnet::bench::monotonic_ns();
    ep_.post_send(size_, mode == kModeInline, seq_++);
    bool sent = false, echoed = false;
    while (!(sent && echoed)) {
      const int n = ep_.wait_wcs(wcs_, static_cast<int>(kQueueDepth));
      for (int i = 0; i < n; ++i) {
        check_wc(wcs_[i]);
        if (wcs_[i].wr_id == kSendWrId) {
          sent = true;
        } else {
          if (wcs_[i].byte_len != size_ || ep_.recv_buf[0] != mode)
            fail_msg("bad echo: " + std::to_string(wcs_[i].byte_len) + " bytes, mode " +
                     std::to_string(ep_.recv_buf[0]));
          echoed = true;
        }
      }
    }
    const std::int64_t t1 = rcnet::bench::monotonic_ns();
    return static_cast<double>(t1 - t0) / 2000.0;
  }

  // The end: a stop message (not echoed), then disconnect.
  void stop() {
    ep_.send_buf[0] = kModeStop;
    ep_.post_send(1, false, seq_++);
    for (bool sent = false; !sent;) {
      const int n = ep_.wait_wcs(wcs_, static_cast<int>(kQueueDepth));
      for (int i = 0; i < n; ++i) {
        check_wc(wcs_[i]);
        sent = sent || wcs_[i].wr_id == kSendWrId;
      }
    }
    if (rdma_disconnect(ep_.id.get()) != 0)
      fail("rdma_disconnect", errno);
    expect_cm_event(ep_.ec.get(), RDMA_CM_EVENT_DISCONNECTED);
  }

 private:
  Endpoint& ep_;
  std::uint32_t size_;
  std::uint32_t seq_ = 0;
  ibv_wc wcs_[kQueueDepth];
};

// Every RTT/2 sample of a run, per mode and per block.
struct Samples {
  std::vector<double> all[2];  // [kModeSend], [kModeInline]
  std::vector<double> block_median;
};

// --warmup round trips of each mode, then --blocks blocks of --per-block,
// alternating send / inline.
Samples measure(Pinger& p, const ClientOpts& o) {
  for (std::uint32_t i = 0; i < o.warmup; ++i) {
    p.round_trip(kModeSend);
    p.round_trip(kModeInline);
  }
  Samples s;
  s.block_median.resize(o.blocks);
  for (std::uint32_t b = 0; b < o.blocks; ++b) {
    const std::uint8_t mode = b % 2 ? kModeInline : kModeSend;
    std::vector<double> v;
    v.reserve(o.per_block);
    for (std::uint32_t i = 0; i < o.per_block; ++i)
      v.push_back(p.round_trip(mode));
    s.block_median[b] = rcnet::bench::median(v);
    s.all[mode].insert(s.all[mode].end(), v.begin(), v.end());
  }
  return s;
}

// The table on stdout and, with --json, the same figures as JSON.
void report(const Samples& s, const ClientOpts& o, std::uint32_t max_inline_granted) {
  using rcnet::bench::median;
  std::vector<double> pair_ratio;
  for (std::uint32_t b = 1; b < o.blocks; b += 2)
    pair_ratio.push_back(s.block_median[b] / s.block_median[b - 1]);
  struct Row {
    const char* name;
    std::size_t count;
    double median, min;
  };
  Row rows[2];
  for (int m = 0; m < 2; ++m) {
    rows[m] = {m == kModeInline ? "inline" : "send", s.all[m].size(), median(s.all[m]),
               rcnet::bench::minimum(s.all[m])};
  }
  const double ratio = rows[0].median > 0 ? rows[1].median / rows[0].median : 0;
  const double pair_median = median(pair_ratio);
  const std::string cs = rcnet::bench::clocksource();

  std::printf("size %u bytes, %u blocks x %u round trips, warm-up %u per mode, clocksource %s\n",
              o.size, o.blocks, o.per_block, o.warmup, cs.c_str());
  std::printf("max_inline_data granted: %u\n", max_inline_granted);
  std::printf("%-8s %8s %16s %14s\n", "mode", "count", "RTT/2 median us", "RTT/2 min us");
  for (const Row& r : rows)
    std::printf("%-8s %8zu %16.2f %14.2f\n", r.name, r.count, r.median, r.min);
  std::printf("ratio of medians inline/send: %.4f\n", ratio);
  std::printf("median over %zu block pairs of median(inline)/median(send): %.4f\n",
              pair_ratio.size(), pair_median);
  if (o.json.empty())
    return;
  nlohmann::json j;
  j["program"] = kProg;
  j["size_bytes"] = o.size;
  j["blocks"] = o.blocks;
  j["per_block"] = o.per_block;
  j["warmup_per_mode"] = o.warmup;
  j["clocksource"] = cs;
  j["max_inline_data_granted"] = max_inline_granted;
  j["unit"] = "us, RTT/2, CLOCK_MONOTONIC, event mode";
  for (const Row& r : rows)
    j["modes"][r.name] = {{"count", r.count}, {"median_us", r.median}, {"min_us", r.min}};
  j["ratio_median_inline_over_send"] = ratio;
  j["block_pair_ratio_median"] = pair_median;
  j["block_pair_ratios"] = pair_ratio;
  j["block_medians_us"] = s.block_median;
  if (!rcnet::bench::write_file(o.json, j.dump(2) + "\n"))
    fail("write " + o.json, errno);
}

int run_client(const ClientOpts& o) {
  Endpoint ep;
  connect_client(ep, o);
  Pinger p(ep, o.size);
  const Samples s = measure(p, o);
  p.stop();
  report(s, o, ep.max_inline_granted);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rcnet-bench-inline: RTT/2 of inline against non-inline sends, event mode", kProg};
  bool server = false, client = false;
  ClientOpts o;
  o.port = 7475;
  app.add_flag("--server", server, "echo server (one connection, then exit)");
  app.add_flag("--client", client, "measuring client");
  app.add_option("--bind", o.bind, "local IPv4 address (source address for the client)")
      ->required();
  app.add_option("--connect", o.connect, "server's IPv4 address (client)");
  app.add_option("--port", o.port, "rdma_cm port");
  app.add_option("--size", o.size, "message bytes")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--blocks", o.blocks, "blocks, alternating send / inline (even)")
      ->check(CLI::Range(2u, 100000u));
  app.add_option("--per-block", o.per_block, "round trips per block")
      ->check(CLI::Range(1u, 10000000u));
  app.add_option("--warmup", o.warmup, "warm-up round trips per mode, not counted");
  app.add_option("--json", o.json, "write the results as JSON to FILE");
  if (const int rc = rcnet::bench::parse_args(app, argc, argv); rc >= 0)
    return rc;
  if (server == client)
    fail_msg("give exactly one of --server and --client");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (server)
    return run_server(o.bind, o.port);
  if (o.connect.empty())
    fail_msg("--client needs --connect ADDR");
  return run_client(o);
}
