// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "event_loop.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <limits>

namespace rcnet::daemon {

struct EventSource::Handler {
  sd_event* event = nullptr;  // borrowed: every source keeps a ref on its loop
  std::string name;
  std::function<void(std::uint32_t)> on_io;
  std::function<void()> on_plain;
  std::function<void(const signalfd_siginfo&)> on_signal;
};

namespace {

Error sd_error(int r, const std::string& what) {
  return Error::from_errno(-r, what);
}

// Runs a callback; an escaping exception is a bug: log it and stop the loop
// rather than unwinding through sd-event.
template <class F>
int guarded(EventSource::Handler* h, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    spdlog::critical("exception escaped event callback '{}': {}; stopping", h->name, e.what());
    sd_event_exit(h->event, 1);
  } catch (...) {
    spdlog::critical("unknown exception escaped event callback '{}'; stopping", h->name);
    sd_event_exit(h->event, 1);
  }
  // Always 0: a negative return would make sd-event disable the source
  // silently.
  return 0;
}

int io_trampoline(sd_event_source*, int, std::uint32_t revents, void* ud) noexcept {
  auto* h = static_cast<EventSource::Handler*>(ud);
  return guarded(h, [&] { h->on_io(revents); });
}
int time_trampoline(sd_event_source*, std::uint64_t, void* ud) noexcept {
  auto* h = static_cast<EventSource::Handler*>(ud);
  return guarded(h, [&] { h->on_plain(); });
}
int plain_trampoline(sd_event_source*, void* ud) noexcept {
  auto* h = static_cast<EventSource::Handler*>(ud);
  return guarded(h, [&] { h->on_plain(); });
}
int signal_trampoline(sd_event_source*, const signalfd_siginfo* si, void* ud) noexcept {
  auto* h = static_cast<EventSource::Handler*>(ud);
  return guarded(h, [&] { h->on_signal(*si); });
}

std::unique_ptr<EventSource::Handler> make_handler(sd_event* e, std::string name) {
  auto h = std::make_unique<EventSource::Handler>();
  h->event = e;
  h->name = std::move(name);
  return h;
}

}  // namespace

EventSource EventLoop::wrap(std::unique_ptr<EventSource::Handler> h, sd_event_source* s) {
  EventSource out;
  out.handler_ = std::move(h);
  out.src_.reset(s);
  sd_event_source_set_description(s, out.handler_->name.c_str());
  return out;
}

std::uint64_t to_monotonic_usec(TimePoint t) {
  if (t == TimePoint::max())
    return std::numeric_limits<std::uint64_t>::max();
  const auto ns = t.time_since_epoch().count();
  if (ns <= 0)
    return 0;
  return static_cast<std::uint64_t>((ns + 999) / 1000);
}

TimePoint from_monotonic_usec(std::uint64_t usec) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::microseconds(usec)));
}

EventSource::EventSource() = default;
EventSource::~EventSource() = default;
EventSource::EventSource(EventSource&&) noexcept = default;
EventSource& EventSource::operator=(EventSource&& o) noexcept {
  if (this != &o) {
    src_ = std::move(o.src_);
    handler_ = std::move(o.handler_);
  }
  return *this;
}

Result<void> EventSource::set_enabled(int mode) {
  if (!src_)
    return Error::invalid("event source not created");
  const int r = sd_event_source_set_enabled(src_.get(), mode);
  if (r < 0)
    return sd_error(r, "sd_event_source_set_enabled " + handler_->name);
  return {};
}

bool EventSource::enabled() const {
  if (!src_)
    return false;
  int mode = SD_EVENT_OFF;
  if (sd_event_source_get_enabled(src_.get(), &mode) < 0)
    return false;
  return mode != SD_EVENT_OFF;
}

Result<void> EventSource::arm_at(TimePoint when) {
  if (!src_)
    return Error::invalid("event source not created");
  if (when == TimePoint::max())
    return set_enabled(SD_EVENT_OFF);
  const int r = sd_event_source_set_time(src_.get(), to_monotonic_usec(when));
  if (r < 0)
    return sd_error(r, "sd_event_source_set_time " + handler_->name);
  return set_enabled(SD_EVENT_ONESHOT);
}

void EventSource::reset() {
  src_.reset();
  handler_.reset();
}

Result<EventLoop> EventLoop::create() {
  sd_event* e = nullptr;
  const int r = sd_event_new(&e);
  if (r < 0)
    return sd_error(r, "sd_event_new");
  return EventLoop(SdEventPtr(e));
}

Result<EventSource> EventLoop::add_io(int fd, std::uint32_t events, std::string name,
                                      std::function<void(std::uint32_t)> cb) {
  auto h = make_handler(get(), std::move(name));
  h->on_io = std::move(cb);
  sd_event_source* s = nullptr;
  const int r = sd_event_add_io(get(), &s, fd, events, io_trampoline, h.get());
  if (r < 0)
    return sd_error(r, "sd_event_add_io " + h->name);
  return wrap(std::move(h), s);
}

Result<EventSource> EventLoop::add_time(TimePoint when, Duration accuracy, std::string name,
                                        std::function<void()> cb) {
  auto h = make_handler(get(), std::move(name));
  h->on_plain = std::move(cb);
  sd_event_source* s = nullptr;
  const bool disabled = when == TimePoint::max();
  // sd-event treats accuracy 0 as "default" (250 ms): never pass 0.
  const auto acc_us = std::max<std::int64_t>(
      1, std::chrono::duration_cast<std::chrono::microseconds>(accuracy).count());
  const int r =
      sd_event_add_time(get(), &s, CLOCK_MONOTONIC, disabled ? 0 : to_monotonic_usec(when),
                        static_cast<std::uint64_t>(acc_us), time_trampoline, h.get());
  if (r < 0)
    return sd_error(r, "sd_event_add_time " + h->name);
  Result<EventSource> out = wrap(std::move(h), s);
  if (out.ok() && disabled) {
    if (auto d = out->set_enabled(SD_EVENT_OFF); !d)
      return d.error();
  }
  return out;
}

Result<EventSource> EventLoop::add_signal(int sig, std::string name,
                                          std::function<void(const signalfd_siginfo&)> cb) {
  auto h = make_handler(get(), std::move(name));
  h->on_signal = std::move(cb);
  sd_event_source* s = nullptr;
  const int r = sd_event_add_signal(get(), &s, sig, signal_trampoline, h.get());
  if (r < 0)
    return sd_error(r, "sd_event_add_signal " + h->name);
  return wrap(std::move(h), s);
}

Result<EventSource> EventLoop::add_defer(std::string name, std::function<void()> cb) {
  auto h = make_handler(get(), std::move(name));
  h->on_plain = std::move(cb);
  sd_event_source* s = nullptr;
  const int r = sd_event_add_defer(get(), &s, plain_trampoline, h.get());
  if (r < 0)
    return sd_error(r, "sd_event_add_defer " + h->name);
  Result<EventSource> out = wrap(std::move(h), s);
  if (out.ok()) {
    if (auto d = out->set_enabled(SD_EVENT_OFF); !d)
      return d.error();
  }
  return out;
}

Result<EventSource> EventLoop::add_post(std::string name, std::function<void()> cb) {
  auto h = make_handler(get(), std::move(name));
  h->on_plain = std::move(cb);
  sd_event_source* s = nullptr;
  const int r = sd_event_add_post(get(), &s, plain_trampoline, h.get());
  if (r < 0)
    return sd_error(r, "sd_event_add_post " + h->name);
  return wrap(std::move(h), s);
}

Result<void> EventLoop::enable_watchdog() {
  const int r = sd_event_set_watchdog(get(), 1);
  if (r < 0)
    return sd_error(r, "sd_event_set_watchdog");
  return {};
}

Result<int> EventLoop::run(Duration busy_poll) {
  if (busy_poll <= Duration::zero()) {
    const int r = sd_event_loop(get());
    if (r < 0)
      return sd_error(r, "sd_event_loop");
    return r;
  }
  // sd_event_loop(3) is this loop with every wait blocking; sd_event_run(3)
  // returns > 0 when it dispatched a source, 0 when the wait timed out.
  // The window's clock is a fresh CLOCK_MONOTONIC read (vDSO), not the
  // loop's cached time, which stands still while nothing is dispatched.
  TimePoint active = Clock::now();
  while (sd_event_get_state(get()) != SD_EVENT_FINISHED) {
    const bool spin = Clock::now() - active < busy_poll;
    if (!spin)
      ++stats_.sleeps;
    const int r = sd_event_run(get(), spin ? 0 : UINT64_MAX);
    if (r < 0)
      return sd_error(r, "sd_event_run");
    if (r > 0 || !spin)
      active = Clock::now();
    else
      ++stats_.empty_polls;
  }
  int code = 0;
  if (const int r = sd_event_get_exit_code(get(), &code); r < 0)
    return sd_error(r, "sd_event_get_exit_code");
  return code;
}

Result<void> EventLoop::run_once(Duration timeout) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  const int r = sd_event_run(get(), static_cast<std::uint64_t>(us < 0 ? 0 : us));
  if (r < 0)
    return sd_error(r, "sd_event_run");
  return {};
}

void EventLoop::exit(int code) {
  sd_event_exit(get(), code);
}

TimePoint EventLoop::now() const {
  std::uint64_t us = 0;
  // Falls back to a fresh clock read outside a dispatch (sd_event_now(3)
  // returns a positive value then, and still fills `us`).
  if (sd_event_now(get(), CLOCK_MONOTONIC, &us) < 0)
    return Clock::now();
  return from_monotonic_usec(us);
}

Result<void> block_signals(std::initializer_list<int> sigs) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : sigs)
    sigaddset(&set, s);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) < 0)
    return Error::from_errno(errno, "sigprocmask");
  return {};
}

}  // namespace rcnet::daemon
