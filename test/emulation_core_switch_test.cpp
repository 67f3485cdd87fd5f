// SPDX-License-Identifier: MIT
// The switch core of the emulated network (core=) on its own thread: buffers of flows from
// several threads are each released once, in the order of their flow, never faster than the
// core's rate (a lower bound on the time: a loaded machine only makes it slower), one core
// per clause in a process, and a flow removed while it waits is never released.
#include "backends/emulated/core_switch.hpp"
#include "netio/emulation.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

TEST_CASE("a switch core releases the buffers of flows from several threads, each once, no faster than its rate",
          "[emulated]") {
  // 10 MB/s with a 1,000-byte bucket: 3 threads x 200 buffers of 1,000 bytes take >= 59.9 ms.
  const netio::RateLimit limit{10e6, 1000};
  auto core = netio::emulated::CoreSwitch::shared(limit);
  CHECK(netio::emulated::CoreSwitch::shared(limit) == core);  // one per clause
  CHECK(netio::emulated::CoreSwitch::shared(netio::RateLimit{20e6, 1000}) != core);
  constexpr int flows = 3, buffers = 200;
  std::mutex mutex;
  std::condition_variable released;
  std::vector<int> count(flows, 0);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int f = 0; f < flows; ++f) {
    threads.emplace_back([&, f] {
      const auto id = core->open();
      for (int b = 0; b < buffers; ++b) {
        core->enqueue(id, 1000, [&, f] {
          std::lock_guard lock(mutex);
          ++count[f];
          released.notify_all();
        });
        std::unique_lock lock(mutex);  // one waiting buffer per flow: the next after its release
        released.wait(lock, [&] { return count[f] == b + 1; });
      }
      core->remove(id);
    });
  }
  for (auto& t : threads) t.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(count == std::vector<int>(flows, buffers));
  CHECK(core->buffers_released() == flows * buffers);
  CHECK(elapsed >= std::chrono::microseconds(59'900));  // (600,000 - 1,000 bytes) / 10 MB/s
  // A flow removed while its buffer waits is never released.
  const netio::RateLimit slow{1, 1};  // one byte per second
  auto stuck = netio::emulated::CoreSwitch::shared(slow);
  std::atomic<int> late{0};
  const auto a = stuck->open();
  stuck->enqueue(a, 1, [&] {});  // takes the bucket's one byte
  const auto b = stuck->open();
  stuck->enqueue(b, 1000, [&] { ++late; });
  stuck->remove(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(late == 0);
}
