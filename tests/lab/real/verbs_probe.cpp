// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnet-verbs-probe: drives rdma::VerbsSeam directly on a real RDMA stack
// (Soft-RoCE in the lab) to see what the device actually does. Test code: a
// small poll() loop on the seam's three fds stands in for the daemon's
// sd-event loop.
//
//   rcnet-verbs-probe --listen ADDR [--port P]
//   rcnet-verbs-probe --connect DST --bind SRC [--port P] [--messages N] ...
//
// The client connects, both sides exchange N SENDs with immediate (imm = the
// sequence number + 1; every payload byte checked), then each side tears its QP
// down the IB spec 10.3.1 way: rdma_disconnect, modify to ERR, wait (bounded)
// for Last WQE Reached, post the drain WR, wait for its flush completion,
// destroy the QP, then the id. One JSON line on stdout summarises the run.
// Exit status 0 only when every check in that line passed.

#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "rdma/verbs_seam.hpp"

namespace {

using rcnet::Duration;
using rcnet::Endpoint;
using rcnet::IpAddr;
using rcnet::to_ms;
using namespace rcnet::rdma;
using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr std::uint64_t kRecvTag = 1ull << 32;
constexpr std::uint64_t kSendTag = 2ull << 32;
constexpr std::uint64_t kDrainWrId = 4ull << 32;
constexpr std::uint32_t kRecvSlots = 64;
constexpr std::uint32_t kSendSlots = 32;
constexpr std::array<std::uint8_t, 4> kReqMagic{'R', 'C', 'V', 'P'};
constexpr std::array<std::uint8_t, 4> kRepMagic{'R', 'C', 'V', 'A'};

struct Options {
  std::string listen;
  std::string connect;
  std::string bind;
  std::uint16_t port = 7471;
  std::uint32_t messages = 100;
  std::uint32_t size = 4096;
  std::uint32_t window = 8;
  int last_wqe_timeout_ms = 1000;
  int drain_timeout_ms = 2000;
  int timeout_ms = 30000;
  bool no_srq = false;
  std::uint32_t crash_after = 0;   // server: _exit after this many messages (0 = never)
  bool expect_peer_crash = false;  // client: the run passes on RETRY_EXC_ERR
};

// Payload byte k of message `seq` sent by `side` (0 client, 1 server).
std::uint8_t pattern(std::uint32_t seq, std::uint32_t k, int side) {
  return static_cast<std::uint8_t>(seq * 131u + k * 7u + static_cast<std::uint32_t>(side) * 17u);
}

void put_be32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  for (int s = 24; s >= 0; s -= 8)
    v.push_back(static_cast<std::uint8_t>(x >> s));
}
std::uint32_t get_be32(const std::vector<std::uint8_t>& v, std::size_t at) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < 4; ++i)
    x = (x << 8) | v[at + i];
  return x;
}

// QPs the kernel reports for this process (`rdma -j res show qp`), or -1 when
// the tool is unavailable.
int kernel_qps_of_this_process() {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen("rdma -j res show qp 2>/dev/null", "r"), pclose);
  if (!p)
    return -1;
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0)
    out.append(buf.data(), n);
  const auto j = Json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    return -1;
  int count = 0;
  for (const auto& qp : j) {
    if (qp.contains("pid") && qp["pid"].is_number() && qp["pid"].get<long>() == getpid())
      ++count;
  }
  return count;
}

enum class Stage { kSetup, kRunning, kAwaitLastWqe, kDraining, kDone, kFailed };

class Probe final : public EventSink {
 public:
  Probe(Options o, VerbsSeam& seam) : o_(std::move(o)), seam_(seam), t0_(SteadyClock::now()) {
    client_ = !o_.connect.empty();
    side_ = client_ ? 0 : 1;
  }

  double now_ms() const { return to_ms(SteadyClock::now() - t0_); }
  void fail(const std::string& what) {
    errors_.push_back(what);
    if (stage_ != Stage::kDone)
      stage_ = Stage::kFailed;
  }
  bool finished() const { return stage_ == Stage::kDone || stage_ == Stage::kFailed; }

  bool start() {
    const auto local_addr = IpAddr::parse(client_ ? o_.bind : o_.listen);
    if (!local_addr) {
      fail("bad local address");
      return false;
    }
    Endpoint local{*local_addr, client_ ? std::uint16_t{0} : o_.port};
    DeviceConfig cfg;
    cfg.cq_size = 1024;
    cfg.srq_size = o_.no_srq ? 0 : 256;
    auto info = seam_.open(local, cfg);
    if (!info) {
      fail(info.error().message());
      return false;
    }
    device_ = info->name;
    // One region: receive slots, then send slots.
    mem_.resize(static_cast<std::size_t>(kRecvSlots + kSendSlots) * o_.size);
    auto mr = seam_.register_memory(mem_);
    if (!mr) {
      fail(mr.error().message());
      return false;
    }
    mr_ = *mr;
    for (std::uint32_t i = 0; i < kSendSlots; ++i)
      free_send_.push_back(i);
    if (!o_.no_srq && !post_recvs(kRecvSlots))
      return false;
    if (client_) {
      auto id = seam_.create_id();
      if (!id) {
        fail(id.error().message());
        return false;
      }
      id_ = *id;
      Endpoint dst{*IpAddr::parse(o_.connect), o_.port};
      if (auto r = seam_.resolve_addr(id_, dst, std::chrono::milliseconds(2000)); !r) {
        fail(r.error().message());
        return false;
      }
    }
    return true;
  }

  // --- EventSink ---------------------------------------------------------------
  void on_cm_event(const CmEvent& ev) override {
    cm_events_.push_back({{"t_ms", now_ms()},
                          {"type", std::string(to_string(ev.type))},
                          {"status", ev.status},
                          {"id", ev.id}});
    switch (ev.type) {
      case CmEventType::kAddrResolved:
        check(seam_.resolve_route(id_, std::chrono::milliseconds(2000)), "resolve_route");
        break;
      case CmEventType::kRouteResolved: {
        if (!make_qp(id_))
          return;
        std::vector<std::uint8_t> pd(kReqMagic.begin(), kReqMagic.end());
        put_be32(pd, o_.messages);
        put_be32(pd, o_.size);
        ConnParams p;
        p.private_data = pd;
        t_connect_ = now_ms();
        check(seam_.connect(id_, p), "connect");
        break;
      }
      case CmEventType::kConnectRequest:
        on_connect_request(ev);
        break;
      case CmEventType::kEstablished:
        if (ev.id != id_)
          break;
        established_ms_ = now_ms();
        if (ev.remote_qpn != 0)
          remote_qpn_ = ev.remote_qpn;
        if (client_) {
          rep_len_ = ev.private_data.size();
          rep_ok_ = ev.private_data.size() >= 12 &&
                    std::equal(kRepMagic.begin(), kRepMagic.end(), ev.private_data.begin()) &&
                    get_be32(ev.private_data, 4) == o_.messages &&
                    get_be32(ev.private_data, 8) == o_.size;
          if (!rep_ok_)
            fail("REP private data does not echo the REQ");
        }
        stage_ = Stage::kRunning;
        t_transfer_ = now_ms();
        pump();
        break;
      case CmEventType::kDisconnected:
        if (ev.id == id_) {
          peer_disconnected_ = true;
          if (stage_ == Stage::kRunning)
            begin_teardown("DISCONNECTED");
        }
        break;
      case CmEventType::kAddrError:
      case CmEventType::kRouteError:
      case CmEventType::kConnectError:
      case CmEventType::kUnreachable:
      case CmEventType::kRejected:
        if (ev.id == id_)
          fail(std::string("connection failed: ") + std::string(to_string(ev.type)));
        break;
      default:
        break;
    }
  }

  void on_async_event(const AsyncEvent& ev) override {
    async_events_.push_back(
        {{"t_ms", now_ms()}, {"type", std::string(to_string(ev.type))}, {"qpn", ev.qpn}});
    if (ev.type == AsyncEventType::kLastWqeReached && ev.qpn == qpn_ && qpn_ != 0) {
      last_wqe_seen_ = true;
      if (stage_ == Stage::kAwaitLastWqe)
        post_drain("last_wqe");
    }
  }

  void on_completions(std::span<const WorkCompletion> wcs) override {
    for (const auto& wc : wcs) {
      if (drain_done_ && wc.qpn == qpn_)
        ++after_drain_;
      if (wc.wr_id == kDrainWrId) {
        drain_done_ = true;
        drain_status_ = std::string(to_string(wc.status));
        drain_ms_ = now_ms() - t_drain_;
        if (stage_ == Stage::kDraining)
          stage_ = Stage::kDone;
        continue;
      }
      if (wc.status != WcStatus::kSuccess) {
        ++error_wcs_[std::string(to_string(wc.status))];
        if ((wc.wr_id & kSendTag) != 0)
          free_send_.push_back(static_cast<std::uint32_t>(wc.wr_id));
        if (stage_ == Stage::kRunning) {
          first_error_ = std::string(to_string(wc.status));
          first_error_after_ms_ = now_ms() - last_good_ms_;
          if (o_.expect_peer_crash) {
            begin_teardown("send error");
          } else {
            fail("completion error " + first_error_);
          }
        }
        continue;
      }
      last_good_ms_ = now_ms();
      if ((wc.wr_id & kSendTag) != 0) {
        free_send_.push_back(static_cast<std::uint32_t>(wc.wr_id));
        ++sends_done_;
      } else if ((wc.wr_id & kRecvTag) != 0) {
        on_recv(wc);
      }
    }
    pump();
  }

  // Called by the loop between waits: deadlines and deferred destruction.
  void tick() {
    if (stage_ == Stage::kRunning && client_ && replies_ok_ + replies_bad_ == o_.messages &&
        sends_done_ == o_.messages) {
      transfer_ms_ = now_ms() - t_transfer_;
      begin_teardown("client done");
    }
    if (stage_ == Stage::kAwaitLastWqe && now_ms() - t_err_ >= o_.last_wqe_timeout_ms) {
      post_drain("timeout");
    }
    if (stage_ == Stage::kDraining && now_ms() - t_drain_ >= o_.drain_timeout_ms) {
      fail("drain WR did not complete within drain_timeout");
      stage_ = Stage::kDone;
    }
  }

  // After the loop: destroy what is left (outside any event handler), audit.
  Json finish() {
    if (id_ != kNoCmId) {
      // One more pass: completions of this QP after its drain WR would break
      // the "drain is last" assumption the manager relies on.
      while (seam_.dispatch_completions()) {
      }
      kernel_qps_before_ = kernel_qps_of_this_process();
      const auto t = SteadyClock::now();
      if (qpn_ != 0)
        check(seam_.destroy_qp(id_), "destroy_qp");
      destroy_qp_ms_ = to_ms(SteadyClock::now() - t);
      check(seam_.destroy_id(id_), "destroy_id");
    }
    const auto left = seam_.qpns();
    const int kernel_left = kernel_qps_of_this_process();
    Json j;
    j["role"] = client_ ? "client" : "server";
    j["device"] = device_;
    j["srq"] = !o_.no_srq;
    j["messages"] = o_.messages;
    j["size"] = o_.size;
    j["messages_ok"] = client_ ? replies_ok_ : recv_ok_;
    j["messages_bad"] = client_ ? replies_bad_ : recv_bad_;
    j["sends_completed"] = sends_done_;
    j["qpn"] = qpn_;
    j["remote_qpn"] = remote_qpn_;
    if (client_) {
      j["rep_private_data_len"] = rep_len_;
      j["rep_private_data_ok"] = rep_ok_;
      j["connect_ms"] = established_ms_ - t_connect_;
      j["transfer_ms"] = transfer_ms_;
    } else {
      j["req_private_data_len"] = req_len_;
    }
    j["teardown_reason"] = teardown_reason_;
    j["peer_disconnected"] = peer_disconnected_;
    j["last_wqe_seen"] = last_wqe_seen_;
    j["last_wqe_wait_ms"] = last_wqe_wait_ms_;
    j["drain_posted_after"] = drain_trigger_;
    j["drain_completed"] = drain_done_;
    j["drain_status"] = drain_status_;
    j["drain_ms"] = drain_ms_;
    j["completions_after_drain"] = after_drain_;
    j["error_completions"] = error_wcs_;
    j["destroy_qp_ms"] = destroy_qp_ms_;
    j["kernel_qps_before_destroy"] = kernel_qps_before_;
    j["kernel_qps_left"] = kernel_left;
    j["seam_qpns_left"] = left.size();
    j["cm_events"] = cm_events_;
    j["async_events"] = async_events_;
    // How a crashed peer showed itself: a process exit makes the peer's kernel
    // destroy its cm id and send a DREQ, so DISCONNECTED usually comes first.
    j["peer_gone_by"] = !first_error_.empty() ? first_error_
                        : peer_disconnected_  ? std::string("DISCONNECTED")
                                              : std::string("none");
    j["first_error_status"] = first_error_;
    j["first_error_after_ms"] = first_error_after_ms_;
    j["errors"] = errors_;
    j["elapsed_ms"] = now_ms();
    const bool msgs_ok = o_.expect_peer_crash
                             ? (first_error_ == "RETRY_EXC_ERR" || peer_disconnected_)
                             : (client_ ? replies_ok_ == o_.messages : recv_ok_ == o_.messages);
    j["ok"] = msgs_ok && drain_done_ && drain_status_ == "WR_FLUSH_ERR" && left.empty() &&
              kernel_left <= 0 && errors_.empty() && stage_ == Stage::kDone;
    return j;
  }

 private:
  void check(const rcnet::Result<void>& r, const char* what) {
    if (!r)
      fail(std::string(what) + ": " + r.error().message());
  }

  bool make_qp(CmIdHandle id) {
    QpCaps caps;
    caps.max_send_wr = kSendSlots + 2;  // + the drain WR
    caps.use_srq = !o_.no_srq;
    caps.max_recv_wr = kRecvSlots;
    auto q = seam_.create_qp(id, caps);
    if (!q) {
      fail(q.error().message());
      return false;
    }
    qpn_ = *q;
    if (o_.no_srq)
      return post_recvs(kRecvSlots);
    return true;
  }

  void on_connect_request(const CmEvent& ev) {
    if (id_ != kNoCmId) {
      // One connection per run: refuse others (the id is ours to destroy
      // later, outside this handler).
      check(seam_.reject(ev.id, {}), "reject");
      extra_ids_.push_back(ev.id);
      return;
    }
    id_ = ev.id;
    remote_qpn_ = ev.remote_qpn;
    req_len_ = ev.private_data.size();
    if (ev.private_data.size() < 12 ||
        !std::equal(kReqMagic.begin(), kReqMagic.end(), ev.private_data.begin())) {
      fail("REQ private data malformed");
      check(seam_.reject(ev.id, {}), "reject");
      return;
    }
    // The receive buffers were posted at --size before any REQ came, so the
    // client must use the same size; the message count is the client's.
    o_.messages = get_be32(ev.private_data, 4);
    if (get_be32(ev.private_data, 8) != o_.size) {
      fail("REQ message size " + std::to_string(get_be32(ev.private_data, 8)) +
           " differs from --size " + std::to_string(o_.size));
      check(seam_.reject(ev.id, {}), "reject");
      return;
    }
    if (!make_qp(ev.id))
      return;
    std::vector<std::uint8_t> pd(kRepMagic.begin(), kRepMagic.end());
    put_be32(pd, o_.messages);
    put_be32(pd, o_.size);
    ConnParams p;
    p.private_data = pd;
    check(seam_.accept(ev.id, p), "accept");
  }

  std::byte* recv_buf(std::uint32_t i) { return mem_.data() + std::size_t{i} * slot_size_; }
  std::byte* send_buf(std::uint32_t i) {
    return mem_.data() + std::size_t{kRecvSlots + i} * slot_size_;
  }
  Sge sge_of(std::byte* p, std::uint32_t len) const {
    return Sge{reinterpret_cast<std::uint64_t>(p), len, mr_.lkey};
  }

  bool post_recvs(std::uint32_t n) {
    slot_size_ = o_.size;
    std::vector<std::uint64_t> ids;
    std::vector<Sge> sges;
    for (std::uint32_t i = 0; i < n; ++i) {
      ids.push_back(kRecvTag | i);
      sges.push_back(sge_of(recv_buf(i), slot_size_));
    }
    auto r = o_.no_srq ? seam_.post_qp_recv(id_, ids, sges) : seam_.post_srq_recv(ids, sges);
    if (!r) {
      fail(r.error().message());
      return false;
    }
    return true;
  }

  void repost(std::uint32_t slot) {
    const std::array<std::uint64_t, 1> ids{kRecvTag | slot};
    const std::array<Sge, 1> sges{sge_of(recv_buf(slot), slot_size_)};
    auto r = o_.no_srq ? seam_.post_qp_recv(id_, ids, sges) : seam_.post_srq_recv(ids, sges);
    if (!r && stage_ == Stage::kRunning)
      fail(r.error().message());
  }

  void on_recv(const WorkCompletion& wc) {
    const auto slot = static_cast<std::uint32_t>(wc.wr_id);
    // The immediate is seq + 1: the seam posts a plain SEND for an
    // immediate of 0 (rdma/seam.hpp post_send).
    const std::uint32_t seq = wc.imm - 1;
    bool good = wc.has_imm && wc.imm != 0 && wc.byte_len == o_.size && wc.qpn == qpn_;
    const int peer_side = 1 - side_;
    const auto* p = reinterpret_cast<const std::uint8_t*>(recv_buf(slot));
    for (std::uint32_t k = 0; good && k < wc.byte_len; ++k) {
      good = p[k] == pattern(seq, k, peer_side);
    }
    if (client_) {
      good ? ++replies_ok_ : ++replies_bad_;
    } else {
      good ? ++recv_ok_ : ++recv_bad_;
      if (good)
        replies_due_.push_back(seq);
    }
    if (!good)
      fail("payload or immediate mismatch on seq " + std::to_string(seq));
    repost(slot);
    if (!client_ && o_.crash_after != 0 && recv_ok_ >= o_.crash_after) {
      // A peer that vanishes without a DREQ: the kernel reclaims its QP.
      std::fflush(stdout);
      std::_Exit(3);
    }
  }

  bool send_one(std::uint32_t seq) {
    if (free_send_.empty())
      return false;
    const std::uint32_t slot = free_send_.back();
    free_send_.pop_back();
    auto* p = reinterpret_cast<std::uint8_t*>(send_buf(slot));
    for (std::uint32_t k = 0; k < o_.size; ++k)
      p[k] = pattern(seq, k, side_);
    check(seam_.post_send(id_, kSendTag | slot, sge_of(send_buf(slot), o_.size), seq + 1, true),
          "post_send");
    return true;
  }

  void pump() {
    if (stage_ != Stage::kRunning)
      return;
    if (client_) {
      while (next_seq_ < o_.messages && next_seq_ - (replies_ok_ + replies_bad_) < o_.window &&
             send_one(next_seq_)) {
        ++next_seq_;
      }
    } else {
      while (!replies_due_.empty() && send_one(replies_due_.front()))
        replies_due_.pop_front();
    }
  }

  void begin_teardown(const char* why) {
    teardown_reason_ = why;
    // The passive QP stays RTS after DISCONNECTED on rxe (docs/lab.md), so both
    // sides move it to ERR themselves after rdma_disconnect.
    check(seam_.disconnect(id_), "disconnect");
    check(seam_.modify_qp_to_error(id_), "modify_qp_to_error");
    t_err_ = now_ms();
    stage_ = Stage::kAwaitLastWqe;
    if (last_wqe_seen_)
      post_drain("last_wqe");
  }

  void post_drain(const char* trigger) {
    drain_trigger_ = trigger;
    last_wqe_wait_ms_ = now_ms() - t_err_;
    t_drain_ = now_ms();
    stage_ = Stage::kDraining;
    check(seam_.post_drain(id_, kDrainWrId), "post_drain");
  }

  Options o_;
  VerbsSeam& seam_;
  SteadyClock::time_point t0_;
  bool client_ = false;
  int side_ = 0;
  Stage stage_ = Stage::kSetup;
  std::string device_;
  std::vector<std::byte> mem_;
  std::uint32_t slot_size_ = 0;
  MemoryRegion mr_{};
  std::vector<std::uint32_t> free_send_;
  std::deque<std::uint32_t> replies_due_;
  CmIdHandle id_ = kNoCmId;
  std::vector<CmIdHandle> extra_ids_;
  Qpn qpn_ = 0;
  Qpn remote_qpn_ = 0;
  std::uint32_t next_seq_ = 0;
  std::uint32_t replies_ok_ = 0, replies_bad_ = 0, recv_ok_ = 0, recv_bad_ = 0, sends_done_ = 0;
  std::size_t rep_len_ = 0, req_len_ = 0;
  bool rep_ok_ = false;
  double t_connect_ = 0, established_ms_ = 0, t_transfer_ = 0, transfer_ms_ = 0;
  double t_err_ = 0, t_drain_ = 0, last_wqe_wait_ms_ = -1, drain_ms_ = -1, destroy_qp_ms_ = -1;
  bool peer_disconnected_ = false, last_wqe_seen_ = false, drain_done_ = false;
  std::string teardown_reason_, drain_trigger_, drain_status_;
  int after_drain_ = 0, kernel_qps_before_ = -1;
  std::map<std::string, int> error_wcs_;
  std::string first_error_;
  double last_good_ms_ = 0, first_error_after_ms_ = -1;
  Json cm_events_ = Json::array(), async_events_ = Json::array();
  std::vector<std::string> errors_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rcnet-verbs-probe: VerbsSeam on a real RDMA device"};
  auto* listen = app.add_option("--listen", o.listen, "server: address to listen on");
  auto* conn = app.add_option("--connect", o.connect, "client: server address");
  app.add_option("--bind", o.bind, "client: our source address (required with --connect)");
  app.add_option("--port", o.port, "rdma_cm port");
  app.add_option("--messages", o.messages, "messages each way");
  app.add_option("--size", o.size, "bytes per message")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--window", o.window, "client: messages in flight")->check(CLI::Range(1u, 16u));
  app.add_option("--last-wqe-timeout-ms", o.last_wqe_timeout_ms, "bound of AWAIT_LAST_WQE");
  app.add_option("--drain-timeout-ms", o.drain_timeout_ms, "bound of DRAINING");
  app.add_option("--timeout-ms", o.timeout_ms, "bound of the whole run");
  app.add_flag("--no-srq", o.no_srq, "per-QP receive queues instead of the SRQ");
  app.add_option("--crash-after", o.crash_after,
                 "server: _exit after N messages (no rdma_disconnect from user space)");
  app.add_flag("--expect-peer-crash", o.expect_peer_crash,
               "client: pass when the peer vanishes (RETRY_EXC_ERR or DISCONNECTED)");
  listen->excludes(conn);
  CLI11_PARSE(app, argc, argv);
  if (o.listen.empty() == o.connect.empty() || (!o.connect.empty() && o.bind.empty())) {
    std::fprintf(stderr, "need --listen ADDR, or --connect DST --bind SRC\n");
    return 2;
  }

  // stdout carries only the JSON summary; the seam's logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_st("probe"));
  auto seam = VerbsSeam::create();
  if (!seam) {
    std::printf("%s\n", Json{{"ok", false}, {"errors", {seam.error().message()}}}.dump().c_str());
    return 1;
  }
  Probe probe(o, **seam);
  (*seam)->set_sink(&probe);
  if (probe.start()) {
    const auto deadline = SteadyClock::now() + std::chrono::milliseconds(o.timeout_ms);
    bool more = false;
    while (!probe.finished()) {
      if (SteadyClock::now() >= deadline) {
        probe.fail("run timed out");
        break;
      }
      std::array<pollfd, 3> fds{{{(*seam)->cm_fd(), POLLIN, 0},
                                 {(*seam)->async_fd(), POLLIN, 0},
                                 {(*seam)->cq_fd(), POLLIN, 0}}};
      if (poll(fds.data(), fds.size(), more ? 0 : 10) < 0 && errno != EINTR) {
        probe.fail("poll failed");
        break;
      }
      (*seam)->dispatch_async_events();
      (*seam)->dispatch_cm_events();
      more = (*seam)->dispatch_completions();
      probe.tick();
    }
  }
  const Json summary = probe.finish();
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
  return summary.value("ok", false) ? 0 : 1;
}
