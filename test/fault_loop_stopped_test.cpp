// SPDX-License-Identifier: MIT
// Work handed to a loop that has stopped (Context::stop(), or a socket outliving its
// loop): it still runs, on the caller's thread, but one task at a time, as the loop would.
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace std::chrono_literals;
using netio::test::eventually;

namespace {

netio::ContextOptions plain_options() {
  return netio::ContextOptions{.busy_poll = false, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}};
}

// The first task holds on until the second runs or 500 ms pass. Run one at a time, the
// second cannot run before the first returned: it must not be seen from inside the first.
template <typename Submit>
bool tasks_overlap(Submit submit) {
  std::atomic<bool> first_entered{false};
  std::atomic<bool> second_ran{false};
  bool overlapped = false;
  std::thread first([&] {
    submit([&] {
      first_entered = true;
      overlapped = eventually([&] { return second_ran.load(); }, 500ms);
    });
  });
  const bool entered = eventually([&] { return first_entered.load(); });
  std::thread second([&] { submit([&] { second_ran = true; }); });
  first.join();
  second.join();
  CHECK(entered);
  CHECK(second_ran);  // nothing dropped
  return overlapped;
}

}  // namespace

TEST_CASE("after stop(), tasks posted from two threads run one at a time", "[faults][event_loop]") {
  netio::Context context(plain_options());
  context.stop();
  CHECK_FALSE(tasks_overlap([&](netio::EventLoop::Task task) { context.loop().post(std::move(task)); }));
}

TEST_CASE("after stop(), run_sync() from two threads runs one task at a time", "[faults][event_loop]") {
  netio::Context context(plain_options());
  context.stop();
  CHECK_FALSE(tasks_overlap([&](const netio::EventLoop::Task& task) { context.loop().run_sync(task); }));
}

TEST_CASE("after stop(), a task may post and run_sync() from inside itself", "[faults][event_loop]") {
  netio::Context context(plain_options());
  context.stop();
  int depth = 0;
  context.loop().post([&] {
    ++depth;
    context.loop().post([&] {
      ++depth;
      context.loop().run_sync([&] { ++depth; });
    });
  });
  CHECK(depth == 3);
}
