// SPDX-License-Identifier: MIT
// Compute nodes whose consumer keeps time-slices (TimesliceReceiver with a KeepingHandler),
// end to end on loopback over both back-ends: kept time-slices stay valid after the handler
// returned, are released on another thread in any order, hold their credits until then
// (a consumer that keeps everything holds the inputs back), and outlive their receiver.
#include "support/scheduled_push_system.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <deque>

using namespace netio;
using namespace netio::test;

namespace {

// Kept time-slices, handed from the receivers' loop threads to the test's threads.
struct KeptQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<sp::Timeslice> kept;

  void add(sp::Timeslice t) {
    {
      std::lock_guard lock(mutex);
      kept.push_back(std::move(t));
    }
    changed.notify_all();
  }
  std::deque<sp::Timeslice> take_all() {
    std::lock_guard lock(mutex);
    return std::exchange(kept, {});
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return kept.size();
  }
};

// The bytes of a kept time-slice, checked long after its handler returned.
bool content_ok(const sp::TimesliceView& view) {
  for (ns::InputIndex i = 0; i < view.contributions.size(); ++i) {
    const auto expected = contribution(i, view.index);
    const auto got = view.contributions[i];
    if (view.contributed[i] == 0 || got.size() != expected.size() ||
        std::memcmp(got.data(), expected.data(), got.size()) != 0) {
      return false;
    }
  }
  return true;
}

// A consumer thread: takes what was kept, checks its bytes and releases it, newest first.
class ReleasingConsumer {
 public:
  explicit ReleasingConsumer(KeptQueue& queue) : queue_(queue), thread_([this] { run(); }) {}
  ~ReleasingConsumer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t released() const { return released_; }
  std::size_t corrupt() const { return corrupt_; }
  std::size_t not_emptied() const { return not_emptied_; }

 private:
  void run() {
    while (!stop_) {
      std::unique_lock lock(queue_.mutex);
      queue_.changed.wait_for(lock, 5ms, [&] { return !queue_.kept.empty(); });
      auto batch = std::exchange(queue_.kept, {});
      lock.unlock();
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
        if (!content_ok(it->view())) ++corrupt_;
        it->release();
        if (*it) ++not_emptied_;
        ++released_;
      }
    }
  }

  KeptQueue& queue_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> released_{0}, corrupt_{0}, not_emptied_{0};
  std::thread thread_;
};

SystemOptions keeping_system(std::uint32_t inputs, std::uint32_t computes, std::uint32_t credits, KeptQueue& queue) {
  SystemOptions options;
  options.config.input_count = inputs;
  options.config.compute_count = computes;
  options.config.timeslices_per_interval = 4 * computes;
  options.credits = credits;
  options.keep = [&queue](ns::ComputeIndex, sp::Timeslice t) { queue.add(std::move(t)); };
  return options;
}

}  // namespace

TEST_CASE("Kept time-slices released out of order on a worker thread: every one is built and credited",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(ns::Mode::best_effort, ns::Mode::dfs);
  INFO(ns::to_string(mode));
  KeptQueue queue;
  const std::uint32_t inputs = 3, computes = 3, credits = 4;
  const ns::TimesliceIndex count = 900;
  auto options = keeping_system(inputs, computes, credits, queue);
  options.mode = mode;  // DFS: acknowledged on arrival, credited on release
  options.config.history_length = 3;
  System system(base, options);

  ReleasingConsumer consumer(queue);
  const auto push_errors = system.push_all(count);
  for (ns::InputIndex i = 0; i < inputs; ++i) CHECK(system.sender(i).wait_finished(30s));
  CHECK(wait_all_delivered(system, computes, count));
  CHECK(eventually([&] { return consumer.released() == count; }));
  consumer.stop();

  CHECK(push_errors.empty());
  CHECK(consumer.corrupt() == 0);
  CHECK(consumer.not_emptied() == 0);
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    check_complete_in_order(system, c, computes, count);
    CHECK(eventually([&] { return system.receiver(c).stats().kept == 0; }));
    const auto stats = system.receiver(c).stats();
    CHECK(stats.complete == count / computes);
    CHECK(stats.held_bytes == 0);
    CHECK(stats.peak_held_bytes <= system.buffer_bytes());
    CHECK(stats.kept_stalls == 0);  // a consumer that keeps up never stalls the inputs for long
  }
  for (ns::InputIndex i = 0; i < inputs; ++i) {
    CHECK(eventually([&] { return system.sender(i).stats().credits_returned == count; }));
    if (mode == ns::Mode::dfs) CHECK(system.sender(i).stats().proposals_taken > 0);
  }
}

TEST_CASE("A consumer that keeps every time-slice holds the inputs back at its credits, and is warned once",
          "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  KeptQueue queue;
  const std::uint32_t inputs = 3, computes = 2, credits = 3;
  const ns::TimesliceIndex count = 60;
  auto options = keeping_system(inputs, computes, credits, queue);
  options.kept_stall_warning = 200ms;
  System system(base, options);

  std::vector<std::string> push_errors;
  std::thread pusher([&] { push_errors = system.push_all(count); });
  // Every compute node keeps `credits` time-slices, and then nothing more comes in.
  const auto all_kept = [&] {
    for (ns::ComputeIndex c = 0; c < computes; ++c) {
      if (system.receiver(c).stats().kept != credits) return false;
    }
    return true;
  };
  CHECK(eventually(all_kept));
  std::this_thread::sleep_for(100ms);
  CHECK(queue.size() == std::size_t{credits} * computes);
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    const auto stats = system.receiver(c).stats();
    CHECK(stats.kept == credits);
    CHECK(stats.complete == credits);
    CHECK(stats.held_bytes > 0);
    CHECK(stats.peak_held_bytes <= system.buffer_bytes());
  }
  for (ns::InputIndex i = 0; i < inputs; ++i) CHECK(system.sender(i).stats().sent < count);
  // Stalled by its consumer for longer than kept_stall_warning, each compute node says so.
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    CHECK(eventually([&] { return system.receiver(c).stats().kept_stalls == 1; }));
  }
  std::this_thread::sleep_for(300ms);  // the stall goes on, more than kept_stall_warning again: still one warning
  for (ns::ComputeIndex c = 0; c < computes; ++c) CHECK(system.receiver(c).stats().kept_stalls == 1);

  // Released, the credits go back and the rest flows.
  ReleasingConsumer consumer(queue);
  pusher.join();
  CHECK(push_errors.empty());
  for (ns::InputIndex i = 0; i < inputs; ++i) CHECK(system.sender(i).wait_finished(30s));
  CHECK(wait_all_delivered(system, computes, count));
  CHECK(eventually([&] { return consumer.released() == count; }));
  consumer.stop();
  CHECK(consumer.corrupt() == 0);
  for (ns::ComputeIndex c = 0; c < computes; ++c) {
    check_complete_in_order(system, c, computes, count);
    CHECK(eventually([&] { return system.receiver(c).stats().held_bytes == 0; }));
  }
}

TEST_CASE("A kept time-slice stays valid after its receiver is destroyed", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  KeptQueue queue;
  const std::uint32_t inputs = 2, computes = 2, credits = 2;
  const ns::TimesliceIndex count = 4;  // two per compute node: both kept, within the credits
  System system(base, keeping_system(inputs, computes, credits, queue));
  REQUIRE(system.push_all(count).empty());
  REQUIRE(eventually([&] { return queue.size() == count; }));  // (wait_finished() would wait for the credits)

  for (ns::InputIndex i = 0; i < inputs; ++i) system.sender_slot(i).reset();
  for (ns::ComputeIndex c = 0; c < computes; ++c) system.receiver_slot(c).reset();
  auto kept = queue.take_all();
  REQUIRE(kept.size() == count);
  for (auto& t : kept) {
    REQUIRE(t);
    CHECK(t.view().complete);
    CHECK(content_ok(t.view()));
    t.release();  // its receiver is gone: frees the memory, nothing else
    CHECK_FALSE(t);
  }
}

TEST_CASE("Kept time-slices released on another thread while their receiver is destroyed", "[scheduled_push]") {
  const auto base = GENERATE(loopback_endpoints());
  KeptQueue queue;
  const std::uint32_t inputs = 2, computes = 2, credits = 16;
  const ns::TimesliceIndex count = 32;  // 16 per compute node: all within the credits
  System system(base, keeping_system(inputs, computes, credits, queue));
  REQUIRE(system.push_all(count).empty());
  REQUIRE(eventually([&] { return queue.size() == count; }));

  auto kept = queue.take_all();
  std::atomic<std::size_t> released{0};
  std::thread consumer([&] {
    for (auto& t : kept) {
      t.release();  // before, during or after the receiver's destruction
      ++released;
      std::this_thread::sleep_for(20us);
    }
  });
  while (released < count / 4) std::this_thread::yield();
  for (ns::InputIndex i = 0; i < inputs; ++i) system.sender_slot(i).reset();
  for (ns::ComputeIndex c = 0; c < computes; ++c) system.receiver_slot(c).reset();
  consumer.join();
  CHECK(released == count);
}
