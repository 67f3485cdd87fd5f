#include "netio/context.hpp"
#include "netio/event_loop.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <future>
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
    elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
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

TEST_CASE("stopping a context joins the loop; posting afterwards runs inline", "[event_loop]") {
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
  netio::Context context(netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}});
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) context.loop().post([&] { ++ran; });
  REQUIRE(eventually([&] { return ran == 1000; }));
}

TEST_CASE("pollers run every round while busy-polling, and may remove themselves", "[event_loop]") {
  netio::Context context(netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}});
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

TEST_CASE("work posted while busy-polling runs, also when busy polling is switched off", "[event_loop]") {
  netio::Context context(netio::ContextOptions{.busy_poll = true, .cpu = std::nullopt, .wrap_backend = {}});
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
