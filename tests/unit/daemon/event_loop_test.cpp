// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "event_loop.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <stdexcept>
#include "catch2_compat.hpp"

#include "loop_timer.hpp"
#include "make_loop.hpp"
#include "unique_fd.hpp"

namespace daemon_event_loop_test {
using namespace rcnet;
using namespace rcnet::daemon;
using rcnet::daemon::test::make_loop;

namespace {
bool fd_open(int fd) {
  return fcntl(fd, F_GETFD) != -1;
}
}  // namespace

TEST_CASE("UniqueFd closes exactly once and hands ownership over on move", "[daemon][fd]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const int raw = fds[0];
  {
    UniqueFd a(fds[0]);
    UniqueFd b(std::move(a));
    CHECK_FALSE(a.valid());
    CHECK(b.get() == raw);
    CHECK(fd_open(raw));
  }
  CHECK_FALSE(fd_open(raw));
  UniqueFd c(fds[1]);
  const int released = c.release();
  CHECK_FALSE(c.valid());
  CHECK(fd_open(released));
  ::close(released);
}

TEST_CASE("monotonic usec conversion rounds up and keeps max as never", "[daemon][loop]") {
  CHECK(to_monotonic_usec(TimePoint(std::chrono::nanoseconds(1))) == 1);
  CHECK(to_monotonic_usec(TimePoint(std::chrono::nanoseconds(1000))) == 1);
  CHECK(to_monotonic_usec(TimePoint(std::chrono::nanoseconds(1001))) == 2);
  CHECK(to_monotonic_usec(TimePoint::max()) == UINT64_MAX);
  const auto t = TimePoint(std::chrono::microseconds(123456));
  CHECK(from_monotonic_usec(to_monotonic_usec(t)) == t);
}

TEST_CASE("LoopTimer fires once for a passed deadline, and max() cancels", "[daemon][loop]") {
  auto loop = make_loop();
  auto timer = LoopTimer::create(loop);
  REQUIRE(timer.ok());
  int fired = 0;
  (*timer)->set_handler([&] { ++fired; });

  // A deadline far away, then replaced by one that already passed: only the
  // latest request counts.
  (*timer)->schedule((*timer)->now() + std::chrono::hours(1));
  (*timer)->schedule((*timer)->now() - std::chrono::milliseconds(1));
  REQUIRE(loop.run_once(std::chrono::seconds(5)).ok());
  CHECK(fired == 1);
  CHECK((*timer)->deadline() == TimePoint::max());

  // One-shot: nothing more without a new schedule().
  REQUIRE(loop.run_once(Duration::zero()).ok());
  CHECK(fired == 1);

  (*timer)->schedule((*timer)->now() - std::chrono::milliseconds(1));
  (*timer)->schedule(TimePoint::max());
  REQUIRE(loop.run_once(Duration::zero()).ok());
  CHECK(fired == 1);
  CHECK((*timer)->expiries() == 1);
}

TEST_CASE("LoopTimer lets the handler schedule the next deadline", "[daemon][loop]") {
  auto loop = make_loop();
  auto timer = LoopTimer::create(loop);
  REQUIRE(timer.ok());
  auto* t = timer->get();
  int fired = 0;
  t->set_handler([&] {
    if (++fired < 3)
      t->schedule(t->now() - std::chrono::milliseconds(1));
  });
  t->schedule(t->now());
  for (int i = 0; i < 5; ++i)
    REQUIRE(loop.run_once(std::chrono::seconds(1)).ok());
  CHECK(fired == 3);
}

TEST_CASE("io source calls back while readable and stops when disabled", "[daemon][loop]") {
  auto loop = make_loop();
  int fds[2];
  REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
  UniqueFd r(fds[0]), w(fds[1]);
  int calls = 0;
  auto src = loop.add_io(r.get(), EPOLLIN, "pipe", [&](std::uint32_t revents) {
    CHECK((revents & EPOLLIN) != 0);
    ++calls;
  });
  REQUIRE(src.ok());
  REQUIRE(loop.run_once(Duration::zero()).ok());
  CHECK(calls == 0);
  REQUIRE(::write(w.get(), "x", 1) == 1);
  REQUIRE(loop.run_once(std::chrono::seconds(1)).ok());
  CHECK(calls == 1);
  REQUIRE(src->set_enabled(SD_EVENT_OFF).ok());
  CHECK_FALSE(src->enabled());
  REQUIRE(loop.run_once(Duration::zero()).ok());
  CHECK(calls == 1);  // still readable, but disabled
}

TEST_CASE("an exception escaping a callback ends the loop with exit code 1", "[daemon][loop]") {
  auto loop = make_loop();
  auto d = loop.add_defer("thrower", [] { throw std::runtime_error("boom"); });
  REQUIRE(d.ok());
  REQUIRE(d->set_enabled(SD_EVENT_ONESHOT).ok());
  auto code = loop.run();
  REQUIRE(code.ok());
  CHECK(*code == 1);
}

TEST_CASE("a blocked signal is delivered through the loop", "[daemon][loop]") {
  REQUIRE(block_signals({SIGUSR1}).ok());
  auto loop = make_loop();
  int got = 0;
  auto s = loop.add_signal(SIGUSR1, "SIGUSR1", [&](const signalfd_siginfo& si) {
    got = static_cast<int>(si.ssi_signo);
  });
  REQUIRE(s.ok());
  REQUIRE(::kill(::getpid(), SIGUSR1) == 0);
  REQUIRE(loop.run_once(std::chrono::seconds(5)).ok());
  CHECK(got == SIGUSR1);
}

TEST_CASE("post source runs after an iteration that dispatched something", "[daemon][loop]") {
  auto loop = make_loop();
  std::vector<std::string> order;
  auto post = loop.add_post("post", [&] { order.push_back("post"); });
  auto d = loop.add_defer("work", [&] { order.push_back("work"); });
  REQUIRE(post.ok());
  REQUIRE(d.ok());
  REQUIRE(d->set_enabled(SD_EVENT_ONESHOT).ok());
  REQUIRE(loop.run_once(Duration::zero()).ok());
  REQUIRE(loop.run_once(Duration::zero()).ok());
  REQUIRE(order.size() >= 2);
  CHECK(order[0] == "work");
  CHECK(order[1] == "post");
}

// transport.poll_us: after activity the loop polls without sleeping for the
// window; an event within it is handled with no blocking wait at all, one
// after it only after the loop slept.
TEST_CASE("busy-poll: an event within the window needs no sleep, one after it does",
          "[daemon][loop]") {
  struct Case {
    Duration window, event_after;
    bool slept;
  };
  const auto c = GENERATE(Case{std::chrono::seconds(2), std::chrono::milliseconds(20), false},
                          Case{std::chrono::milliseconds(1), std::chrono::milliseconds(300), true});
  auto loop = make_loop();
  std::uint64_t sleeps_at_event = 99, empty_polls_at_event = 0;
  auto t = loop.add_time(Clock::now() + c.event_after, std::chrono::microseconds(1), "event", [&] {
    sleeps_at_event = loop.stats().sleeps;
    empty_polls_at_event = loop.stats().empty_polls;
    loop.exit(7);
  });
  REQUIRE(t.ok());
  auto code = loop.run(c.window);
  REQUIRE(code.ok());
  CHECK(*code == 7);
  INFO("window " << c.window.count() << " ns, event after " << c.event_after.count() << " ns");
  if (c.slept) {
    CHECK(sleeps_at_event >= 1);
  } else {
    CHECK(sleeps_at_event == 0);
    CHECK(empty_polls_at_event > 0);  // it polled, not slept, until the event
  }
}

}  // namespace daemon_event_loop_test
