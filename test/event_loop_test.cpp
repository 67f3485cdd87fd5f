// SPDX-License-Identifier: MIT
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::test::eventually;

TEST_CASE("posted tasks run on the loop thread, in order per poster, from many threads", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  constexpr int threads = 8;
  constexpr int per_thread = 5000;
  std::vector<std::vector<int>> seen(threads);  // touched on the loop thread only
  std::atomic<int> off_loop{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < threads; ++t) {
    posters.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        loop.post([&, t, i] {
          if (!loop.in_loop_thread()) ++off_loop;
          seen[t].push_back(i);
        });
      }
    });
  }
  for (auto& p : posters) p.join();
  loop.run_sync([] {});  // everything posted before this has run
  CHECK(off_loop == 0);
  for (int t = 0; t < threads; ++t) {
    REQUIRE(seen[t].size() == per_thread);
    for (int i = 0; i < per_thread; ++i) REQUIRE(seen[t][i] == i);
  }
}

TEST_CASE("run_sync runs inline on the loop thread and propagates exceptions", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  std::thread::id ran_on;
  loop.run_sync([&] { ran_on = std::this_thread::get_id(); });
  CHECK(ran_on != std::this_thread::get_id());
  bool nested_inline = false;
  loop.run_sync([&] { loop.run_sync([&] { nested_inline = loop.in_loop_thread(); }); });
  CHECK(nested_inline);
  CHECK_THROWS_WITH(loop.run_sync([] { throw std::runtime_error("boom"); }), "boom");
}

TEST_CASE("one-shot timers fire once, after their delay", "[event_loop]") {
  netio::Context context;
  std::atomic<int> fired{0};
  const auto start = std::chrono::steady_clock::now();
  std::atomic<std::int64_t> elapsed_ms{0};
  context.loop().add_timer(50ms, 0ms, [&] {
    elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    ++fired;
  });
  REQUIRE(eventually([&] { return fired == 1; }));
  std::this_thread::sleep_for(150ms);
  CHECK(fired == 1);
  CHECK(elapsed_ms >= 50);
}

TEST_CASE("periodic timers repeat until cancelled", "[event_loop]") {
  netio::Context context;
  std::atomic<int> fired{0};
  const auto id = context.loop().add_timer(5ms, 5ms, [&] { ++fired; });
  REQUIRE(eventually([&] { return fired >= 5; }));
  context.loop().cancel_timer(id);
  context.loop().run_sync([] {});
  const int at_cancel = fired;
  std::this_thread::sleep_for(60ms);
  CHECK(fired == at_cancel);
}

TEST_CASE("a cancelled timer never fires, and a timer may cancel itself", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  std::atomic<int> cancelled_fired{0};
  const auto id = loop.add_timer(30ms, 0ms, [&] { ++cancelled_fired; });
  loop.cancel_timer(id);
  std::atomic<int> self_fired{0};
  netio::EventLoop::TimerId self = 0;
  loop.run_sync([&] {
    self = loop.add_timer(1ms, 1ms, [&] {
      ++self_fired;
      loop.cancel_timer(self);
    });
  });
  std::this_thread::sleep_for(100ms);
  CHECK(cancelled_fired == 0);
  CHECK(self_fired == 1);
}

TEST_CASE("file descriptors: readiness callbacks, modification and removal", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  const int fd = ::eventfd(0, EFD_NONBLOCK);
  REQUIRE(fd >= 0);
  std::atomic<int> reads{0};
  loop.run_sync([&] {
    loop.add_fd(fd, EPOLLIN, [&](std::uint32_t events) {
      std::uint64_t value = 0;
      if ((events & EPOLLIN) && ::read(fd, &value, sizeof value) == sizeof value) reads += static_cast<int>(value);
    });
  });
  const std::uint64_t three = 3;
  REQUIRE(::write(fd, &three, sizeof three) == sizeof three);
  REQUIRE(eventually([&] { return reads == 3; }));

  loop.run_sync([&] { loop.modify_fd(fd, 0); });  // no interest: nothing is delivered
  REQUIRE(::write(fd, &three, sizeof three) == sizeof three);
  std::this_thread::sleep_for(50ms);
  CHECK(reads == 3);
  loop.run_sync([&] { loop.modify_fd(fd, EPOLLIN); });
  REQUIRE(eventually([&] { return reads == 6; }));

  loop.run_sync([&] { loop.remove_fd(fd); });
  REQUIRE(::write(fd, &three, sizeof three) == sizeof three);
  std::this_thread::sleep_for(50ms);
  CHECK(reads == 6);
  ::close(fd);
}

TEST_CASE("a handler removed by an earlier handler in the same batch is not called", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  const int a = ::eventfd(1, EFD_NONBLOCK);
  const int b = ::eventfd(1, EFD_NONBLOCK);
  std::atomic<int> calls{0};
  loop.run_sync([&] {
    // Whichever runs first removes both; the other must not run.
    auto handler = [&](std::uint32_t) {
      ++calls;
      loop.remove_fd(a);
      loop.remove_fd(b);
    };
    loop.add_fd(a, EPOLLIN, handler);
    loop.add_fd(b, EPOLLIN, handler);
  });
  std::this_thread::sleep_for(50ms);
  CHECK(calls == 1);
  loop.run_sync([] {});  // the removal happened-before the close
  ::close(a);
  ::close(b);
}

TEST_CASE("stopping a context joins the loop, posting afterwards runs inline", "[event_loop]") {
  netio::Context context;
  std::atomic<int> ran{0};
  context.loop().post([&] { ++ran; });
  context.stop();
  CHECK(ran == 1);
  CHECK_FALSE(context.loop().running());
  context.loop().post([&] { ++ran; });
  CHECK(ran == 2);
  context.stop();  // idempotent
}

TEST_CASE("busy polling delivers posted work too", "[event_loop]") {
  netio::Context context(
      netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}});
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) context.loop().post([&] { ++ran; });
  REQUIRE(eventually([&] { return ran == 1000; }));
}

TEST_CASE("pollers run every round while busy-polling, and may remove themselves", "[event_loop]") {
  netio::Context context(
      netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}});
  netio::EventLoop& loop = context.loop();
  std::atomic<int> forever{0}, limited{0};
  netio::EventLoop::PollerId forever_id = 0;
  loop.run_sync([&] {
    forever_id = loop.add_poller([&] { ++forever; });
    auto self = std::make_shared<netio::EventLoop::PollerId>(0);
    *self = loop.add_poller([&, self] {
      if (++limited == 100) loop.remove_poller(*self);
    });
  });
  // Nothing wakes the loop: only spinning runs them.
  REQUIRE(eventually([&] { return forever > 10'000; }));
  CHECK(limited == 100);
  // Timers and fds are still served while pollers spin (the loop looks at them every few rounds).
  std::atomic<bool> fired{false};
  loop.add_timer(1ms, 0ms, [&] { fired = true; });
  REQUIRE(eventually([&] { return fired.load(); }));
  loop.run_sync([&] { loop.remove_poller(forever_id); });
  const int after = forever;
  loop.run_sync([] {});
  CHECK(forever == after);
}

TEST_CASE("a loop kept awake looks every round until its deadline, then sleeps again", "[event_loop]") {
  netio::Context context;  // not busy-polling
  netio::EventLoop& loop = context.loop();
  std::atomic<int> rounds{0};
  loop.run_sync([&] { loop.add_poller([&] { ++rounds; }); });
  // Asleep: the poller runs only when something wakes the loop.
  std::this_thread::sleep_for(20ms);
  const int asleep = rounds;
  CHECK(asleep < 10);
  // Awake for 100 ms: round after round with nothing to wake it.
  loop.run_sync([&] { loop.stay_awake_until(std::chrono::steady_clock::now() + 100ms); });
  REQUIRE(eventually([&] { return rounds > asleep + 1'000; }));
  // Past the deadline it sleeps again (an earlier deadline does not shorten a later one).
  loop.run_sync([&] { loop.stay_awake_until(std::chrono::steady_clock::now()); });
  std::this_thread::sleep_for(150ms);
  const int settled = rounds;
  std::this_thread::sleep_for(50ms);
  CHECK(rounds < settled + 10);
}

TEST_CASE("spinning fds are reported every round for what they ask, without epoll, until removed", "[event_loop]") {
  netio::Context context(
      netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}});
  netio::EventLoop& loop = context.loop();
  const int fd = ::eventfd(0, EFD_NONBLOCK);
  REQUIRE(fd >= 0);
  std::atomic<int> calls{0}, empty{0}, outputs{0};
  std::atomic<std::uint64_t> read_total{0};
  loop.run_sync([&] {
    loop.add_fd(fd, EPOLLIN, [&](std::uint32_t events) {
      ++calls;
      if (events & EPOLLOUT) ++outputs;  // never asked for: must never be reported
      std::uint64_t value = 0;
      if (::read(fd, &value, sizeof value) == sizeof value)
        read_total += value;
      else
        ++empty;
    });
    loop.spin_fd(fd, EPOLLIN | EPOLLOUT);
  });
  // Nothing is readable and nothing wakes the loop: only spinning calls the handler.
  REQUIRE(eventually([&] { return empty > 10'000; }));
  const std::uint64_t five = 5;
  REQUIRE(::write(fd, &five, sizeof five) == sizeof five);
  REQUIRE(eventually([&] { return read_total == 5; }));
  CHECK(outputs == 0);

  loop.run_sync([&] { loop.modify_fd(fd, 0); });  // asks for nothing: not reported
  int before = calls;
  loop.run_sync([] {});
  loop.run_sync([] {});
  CHECK(calls == before);
  loop.run_sync([&] { loop.modify_fd(fd, EPOLLIN); });
  REQUIRE(eventually([&] { return calls > before + 1000; }));

  loop.run_sync([&] { loop.remove_fd(fd); });
  before = calls;
  loop.run_sync([] {});
  loop.run_sync([] {});
  CHECK(calls == before);
  ::close(fd);
}

TEST_CASE("spin_fd is a no-op when the loop sleeps", "[event_loop]") {
  netio::Context context;
  netio::EventLoop& loop = context.loop();
  const int fd = ::eventfd(0, EFD_NONBLOCK);
  REQUIRE(fd >= 0);
  std::atomic<int> calls{0};
  loop.run_sync([&] {
    loop.add_fd(fd, EPOLLIN, [&](std::uint32_t) {
      ++calls;
      std::uint64_t value = 0;
      [[maybe_unused]] const auto n = ::read(fd, &value, sizeof value);
    });
    loop.spin_fd(fd, EPOLLIN);
  });
  std::this_thread::sleep_for(20ms);
  CHECK(calls == 0);  // nothing readable, nothing reported
  const std::uint64_t one = 1;
  REQUIRE(::write(fd, &one, sizeof one) == sizeof one);
  REQUIRE(eventually([&] { return calls == 1; }));
  loop.run_sync([&] { loop.remove_fd(fd); });
  ::close(fd);
}

TEST_CASE("work posted while busy-polling runs, also when busy polling is switched off", "[event_loop]") {
  netio::Context context(
      netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}});
  std::atomic<int> ran{0};
  for (int round = 0; round < 200; ++round) {
    context.loop().post([&] { ++ran; });
    if (round == 100) context.loop().set_busy_poll(false);  // the loop goes to sleep in epoll_wait
  }
  REQUIRE(eventually([&] { return ran == 200; }));
  // Asleep now: a post must still wake it.
  context.loop().post([&] { ++ran; });
  CHECK(eventually([&] { return ran == 201; }));
}

namespace {

std::size_t open_fd_count() {
  const auto entries = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(entries), std::filesystem::end(entries)));
}

// A sleeping loop (timers come from the timerfd), or a spinning one with a poller, which
// looks at epoll only every 64th round (timers come from the check every round).
std::unique_ptr<netio::Context> sleeping_or_spinning_context(bool spinning) {
  auto context = std::make_unique<netio::Context>(
      netio::ContextOptions{.busy_poll = spinning, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}});
  if (spinning) context->loop().run_sync([&] { context->loop().add_poller([] {}); });
  return context;
}

}  // namespace

TEST_CASE("timers fire in deadline order, ties in the order they were added", "[event_loop]") {
  const bool spinning = GENERATE(false, true);
  CAPTURE(spinning);
  const auto context = sleeping_or_spinning_context(spinning);
  auto& loop = context->loop();
  using clock = std::chrono::steady_clock;
  constexpr int distinct = 200;
  constexpr int ties = 10;
  std::vector<std::chrono::microseconds> delays;
  for (int i = 0; i < distinct; ++i) delays.emplace_back(i * 500);
  std::shuffle(delays.begin(), delays.end(), std::mt19937(14));
  const auto tie_index = delays.size();
  delays.insert(delays.end(), ties, 50250us);  // equal delays, added one after the other
  // A deadline is its delay after a moment inside add_timer(): between these two readings.
  std::vector<clock::time_point> earliest(delays.size()), latest(delays.size());
  std::vector<std::size_t> fired;  // loop thread only until the last one fired
  std::atomic<std::size_t> done{0};
  loop.run_sync([&] {
    for (std::size_t i = 0; i < delays.size(); ++i) {
      earliest[i] = clock::now() + delays[i];
      loop.add_timer(delays[i], 0ms, [&, i] {
        fired.push_back(i);
        ++done;
      });
      latest[i] = clock::now() + delays[i];
    }
  });
  REQUIRE(eventually([&] { return done == delays.size(); }));
  loop.run_sync([&] {
    REQUIRE(fired.size() == delays.size());
    for (std::size_t k = 1; k < fired.size(); ++k) {
      const auto before = fired[k - 1], after = fired[k];
      INFO("timer " << before << " fired before timer " << after);
      CHECK(earliest[before] <= latest[after]);  // else `after` was certainly due first
    }
    std::vector<std::size_t> tie_order;
    std::copy_if(fired.begin(), fired.end(), std::back_inserter(tie_order),
                 [&](std::size_t i) { return i >= tie_index; });
    std::vector<std::size_t> added_order(ties);
    std::iota(added_order.begin(), added_order.end(), tie_index);
    CHECK(tie_order == added_order);
  });
}

TEST_CASE("a timer cancelled by another timer of the same batch does not fire", "[event_loop]") {
  const bool spinning = GENERATE(false, true);
  CAPTURE(spinning);
  const auto context = sleeping_or_spinning_context(spinning);
  auto& loop = context->loop();
  std::vector<int> fired;  // loop thread only
  netio::EventLoop::TimerId later = 0, periodic = 0;
  loop.run_sync([&] {
    loop.add_timer(5ms, 0ms, [&] {
      fired.push_back(1);
      loop.cancel_timer(later);
      loop.cancel_timer(periodic);
    });
    later = loop.add_timer(6ms, 0ms, [&] { fired.push_back(2); });
    periodic = loop.add_timer(7ms, 1ms, [&] { fired.push_back(3); });
    loop.add_timer(8ms, 0ms, [&] { fired.push_back(4); });
    // Keep the loop busy past every deadline: all four are due in the same batch.
    std::this_thread::sleep_for(30ms);
  });
  loop.run_sync([] {});  // the batch has run: it was due before this task was posted
  std::this_thread::sleep_for(20ms);
  loop.run_sync([&] { CHECK(fired == std::vector<int>{1, 4}); });
}

TEST_CASE("timers cancelled from another thread do not fire, cancelling releases the callback", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  std::atomic<int> fired{0};
  auto token = std::make_shared<int>(0);
  const auto id = loop.add_timer(100ms, 0ms, [&fired, token] { ++fired; });
  std::thread([&] { loop.cancel_timer(id); }).join();
  loop.run_sync([] {});
  CHECK(token.use_count() == 1);  // the cancelled callback was destroyed
  std::this_thread::sleep_for(150ms);
  CHECK(fired == 0);
}

TEST_CASE("100,000 pending timers all fire, once each and not before their deadline", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  constexpr int count = 100'000;
  using clock = std::chrono::steady_clock;
  std::vector<clock::time_point> deadlines(count);
  std::vector<int> calls(count, 0);  // loop thread only until all fired
  std::atomic<int> fired{0}, early{0};
  loop.run_sync([&] {
    for (int i = 0; i < count; ++i) {
      // Spread over 0-200 ms, out of order.
      const auto delay = std::chrono::microseconds((i * 7919L) % 200'000);
      deadlines[i] = clock::now() + delay;
      loop.add_timer(delay, 0ms, [&, i] {
        if (clock::now() < deadlines[i]) ++early;
        ++calls[i];
        ++fired;
      });
    }
  });
  REQUIRE(eventually([&] { return fired == count; }, 20s));
  std::this_thread::sleep_for(20ms);
  loop.run_sync([&] {
    CHECK(fired == count);
    CHECK(early == 0);
    CHECK(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
  });
}

TEST_CASE("100,000 timers added then cancelled never fire", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  constexpr int count = 100'000;
  std::atomic<int> fired{0};
  auto token = std::make_shared<int>(0);
  // Hold the loop while this thread posts every add and every cancel: they then run in one
  // drain, in order, however slowly they were posted (a cancel racing a due timer is no test).
  std::promise<void> holding, release;
  loop.post([&holding, released = release.get_future().share()] {
    holding.set_value();
    released.wait();
  });
  holding.get_future().wait();
  std::vector<netio::EventLoop::TimerId> ids;
  ids.reserve(count);
  for (int i = 0; i < count; ++i) {
    const auto delay = std::chrono::microseconds((i * 7919L) % 200'000);
    ids.push_back(loop.add_timer(delay, i % 2 ? 1ms : 0ms, [&fired, token] { ++fired; }));
  }
  for (const auto id : ids) loop.cancel_timer(id);
  release.set_value();
  loop.run_sync([] {});
  CHECK(token.use_count() == 1);  // every callback destroyed
  std::this_thread::sleep_for(300ms);
  loop.run_sync([] {});
  CHECK(fired == 0);
}

TEST_CASE("timers added from several threads at once all fire on the loop thread", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  constexpr int threads = 4;
  constexpr int per_thread = 5000;
  std::vector<std::vector<int>> calls(threads, std::vector<int>(per_thread, 0));  // loop thread only
  std::atomic<int> fired{0}, off_loop{0};
  std::vector<std::thread> adders;
  for (int t = 0; t < threads; ++t) {
    adders.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        loop.add_timer(std::chrono::microseconds((i * 31) % 50'000), 0ms, [&, t, i] {
          if (!loop.in_loop_thread()) ++off_loop;
          ++calls[t][i];
          ++fired;
        });
      }
    });
  }
  for (auto& a : adders) a.join();
  REQUIRE(eventually([&] { return fired == threads * per_thread; }));
  loop.run_sync([&] {
    CHECK(off_loop == 0);
    for (const auto& per : calls) CHECK(std::all_of(per.begin(), per.end(), [](int c) { return c == 1; }));
  });
}

TEST_CASE("periodic timers keep their schedule when callbacks take time (no drift)", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  std::atomic<int> fired{0};
  // Each call takes half a period. Re-armed from the end of the call, the timer would fire
  // every 15 ms (40 times in 600 ms); from its previous deadline, every 10 ms (60 times).
  const auto start = std::chrono::steady_clock::now();
  const auto id = loop.add_timer(10ms, 10ms, [&] {
    ++fired;
    std::this_thread::sleep_for(5ms);
  });
  std::this_thread::sleep_for(600ms - (std::chrono::steady_clock::now() - start));
  loop.cancel_timer(id);
  loop.run_sync([] {});
  const int count = fired;
  INFO("fired " << count << " times in 600 ms at a 10 ms period");
  CHECK(count >= 50);  // loose: a loaded machine may skip a few periods
  CHECK(count <= 61);
}

TEST_CASE("timers queued by a timer callback, even already due, run in a later round", "[event_loop]") {
  const bool spinning = GENERATE(false, true);
  CAPTURE(spinning);
  const auto context = sleeping_or_spinning_context(spinning);
  auto& loop = context->loop();
  std::atomic<bool> stop{false}, posted_ran{false};
  std::atomic<int> chain{0};
  std::function<void()> again = [&] {
    ++chain;
    if (!stop) loop.add_timer(0ms, 0ms, again);
  };
  loop.add_timer(0ms, 0ms, again);
  REQUIRE(eventually([&] { return chain > 100; }));
  // The chain never ends by itself; posted work must still get its turn between batches.
  loop.post([&] { posted_ran = true; });
  const bool interleaved = eventually([&] { return posted_ran.load(); }, 5s);
  stop = true;
  CHECK(interleaved);
  loop.run_sync([] {});
}

TEST_CASE("timers later than the earliest cost no file descriptor", "[event_loop]") {
  netio::Context context;
  auto& loop = context.loop();
  std::atomic<int> fired{0};
  loop.run_sync([&] {
    const auto before = open_fd_count();
    loop.add_timer(1h, 0ms, [&] { ++fired; });
    for (int i = 0; i < 1000; ++i) loop.add_timer(2h + std::chrono::seconds(i), 0ms, [&] { ++fired; });
    CHECK(open_fd_count() == before);
  });
  CHECK(fired == 0);
}

TEST_CASE("pending timers are dropped with the loop, their callbacks destroyed", "[event_loop]") {
  auto token = std::make_shared<int>(0);
  std::atomic<int> fired{0};
  {
    netio::Context context;
    context.loop().add_timer(1h, 0ms, [&fired, token] { ++fired; });
    context.loop().add_timer(1h, 1h, [&fired, token] { ++fired; });
    context.loop().run_sync([] {});
    CHECK(token.use_count() == 3);
  }
  CHECK(token.use_count() == 1);
  CHECK(fired == 0);
}
