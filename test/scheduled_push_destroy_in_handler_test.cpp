// SPDX-License-Identifier: MIT
// A TimesliceReceiver may be destroyed inside its own handlers, on every back-end, as every
// socket may (docs/design/conventions.md): nothing is handed over after, nothing crashes
// (the sanitizer stages run this), and the inputs see the compute node gone.
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <atomic>

using namespace netio;
using namespace netio::test;

namespace {

SystemOptions one_compute_node() {
  SystemOptions options;
  options.config.input_count = 2;
  options.config.compute_count = 1;
  options.config.timeslices_per_interval = 4;
  options.credits = 8;  // every time-slice pushed below fits: no push waits for the gone receiver
  return options;
}

constexpr ns::TimesliceIndex pushed = 8;
constexpr std::size_t destroy_at = 3;  // the handler of the 3rd time-slice destroys its receiver

}  // namespace

TEST_CASE("A time-slice receiver destroyed inside its handler hands over nothing after", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  auto options = one_compute_node();
  System* running = nullptr;
  std::atomic<std::size_t> handled{0};
  std::atomic<bool> destroyed{false};
  options.after_delivery = [&](ns::ComputeIndex c, const sp::TimesliceView&) {
    if (++handled == destroy_at) {
      running->receiver_slot(c).reset();  // on the receiver's loop thread, inside its handler
      destroyed = true;
    }
  };
  System system(base, options);
  running = &system;
  (void)system.push_range(0, pushed, false);  // pushes after the receiver went may fail: not checked here
  REQUIRE(eventually([&] { return destroyed.load(); }));
  std::this_thread::sleep_for(50ms);  // what was still on its way is not handed over
  CHECK(system.deliveries(0).count() == destroy_at);
  CHECK(handled.load() == destroy_at);
}

TEST_CASE("A time-slice receiver destroyed inside its keeping handler hands over nothing after", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  auto options = one_compute_node();
  System* running = nullptr;
  std::atomic<std::size_t> kept{0};
  std::atomic<bool> destroyed{false};
  std::mutex mutex;
  std::vector<sp::Timeslice> held;  // kept past their receiver: released after it is gone
  options.keep = [&](ns::ComputeIndex c, sp::Timeslice t) {
    {
      std::lock_guard lock(mutex);
      held.push_back(std::move(t));
    }
    if (++kept == destroy_at) {
      running->receiver_slot(c).reset();
      destroyed = true;
    }
  };
  System system(base, options);
  running = &system;
  (void)system.push_range(0, pushed, false);  // pushes after the receiver went may fail: not checked here
  REQUIRE(eventually([&] { return destroyed.load(); }));
  std::this_thread::sleep_for(50ms);
  CHECK(system.deliveries(0).count() == destroy_at);
  CHECK(kept.load() == destroy_at);
  std::lock_guard lock(mutex);
  for (auto& t : held) t.release();  // no credit can go back: nothing happens, nothing crashes
}
