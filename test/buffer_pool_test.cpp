// SPDX-License-Identifier: MIT
#include "netio/backend/buffer.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {
struct CountingRegistrar : netio::MemoryRegistrar {
  int registered = 0;
  int deregistered = 0;
  void register_buffer(netio::Buffer& b) override {
    ++registered;
    b.desc = &registered;
  }
  void deregister_buffer(netio::Buffer& b) noexcept override {
    ++deregistered;
    b.desc = nullptr;
  }
};
}  // namespace

TEST_CASE("a pool hands out at most its count of distinct buffers", "[buffer_pool]") {
  netio::BufferPool pool(4, 1000);
  std::set<netio::Buffer*> held;
  for (int i = 0; i < 4; ++i) {
    auto* b = pool.try_acquire();
    REQUIRE(b != nullptr);
    CHECK(b->capacity >= 1000);
    CHECK(reinterpret_cast<std::uintptr_t>(b->data) % 4096 == 0);
    held.insert(b);
  }
  CHECK(held.size() == 4);
  CHECK(pool.try_acquire() == nullptr);
  CHECK(pool.acquire(20ms) == nullptr);
  pool.release(*held.begin());
  CHECK(pool.try_acquire() == *held.begin());
}

TEST_CASE("acquire waits for a release from another thread, and close wakes waiters", "[buffer_pool]") {
  netio::BufferPool pool(1, 64);
  auto* only = pool.try_acquire();
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    pool.release(only);
  });
  CHECK(pool.acquire(5s) == only);
  releaser.join();
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    pool.close();
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(pool.acquire(10s) == nullptr);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  closer.join();
}

TEST_CASE("buffers are registered once, when first used, and again only when they grow", "[buffer_pool]") {
  CountingRegistrar registrar;
  {
    netio::BufferPool pool(3, 4096, &registrar);
    CHECK(registrar.registered == 0);  // lazily allocated
    auto* b = pool.try_acquire();
    CHECK(registrar.registered == 1);
    CHECK(b->desc == &registrar.registered);
    pool.release(b);
    b = pool.try_acquire();
    CHECK(registrar.registered == 1);  // reused, not registered again
    pool.reserve(b, 4096);
    CHECK(registrar.registered == 1);
    pool.reserve(b, 3 * 4096);
    CHECK(registrar.registered == 2);
    CHECK(registrar.deregistered == 1);
    CHECK(b->capacity >= 3 * 4096);
    CHECK(pool.bytes_allocated() == b->capacity);
    pool.release(b);
  }
  CHECK(registrar.deregistered == registrar.registered);
}

TEST_CASE("a waiter gets a lone returned buffer promptly, though wake-ups come in batches", "[buffer_pool]") {
  netio::BufferPool pool(16, 64);  // wakes waiters when 4 are free
  std::vector<netio::Buffer*> held;
  for (int i = 0; i < 16; ++i) held.push_back(pool.try_acquire());
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    pool.release(held.back());  // one buffer only: below the batch
  });
  const auto start = std::chrono::steady_clock::now();
  netio::Buffer* got = pool.acquire(10s);
  const auto waited = std::chrono::steady_clock::now() - start;
  releaser.join();
  CHECK(got == held.back());
  CHECK(waited < 1s);  // the 1 ms re-check finds it; without it this waits the full 10 s
  held.pop_back();
  pool.release(got);
  for (auto* b : held) pool.release(b);
  CHECK(pool.available() == 16);
}

TEST_CASE("acquire() returns nothing only on timeout, however many threads compete", "[buffer_pool]") {
  netio::BufferPool pool(2, 64);
  std::atomic<int> empty_handed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        netio::Buffer* b = pool.acquire(10s);
        if (b == nullptr) {
          ++empty_handed;
          continue;
        }
        std::this_thread::yield();
        pool.release(b);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(empty_handed == 0);
  CHECK(pool.available() == 2);
}

TEST_CASE("a buffer given back and kept aside for the next acquire is refused after close", "[buffer_pool]") {
  netio::BufferPool pool(2, 64);
  auto* a = pool.try_acquire();
  auto* b = pool.try_acquire();
  pool.release(a);  // kept aside (nobody waits)
  CHECK(pool.available() == 1);
  CHECK(pool.try_acquire() == a);  // the next acquire takes it
  pool.release(a);
  pool.release(b);
  CHECK(pool.available() == 2);
  pool.close();
  CHECK(pool.try_acquire() == nullptr);
  CHECK(pool.acquire(10ms) == nullptr);
  CHECK(pool.available() == 2);
}

TEST_CASE("no buffer is handed to two holders at once, whichever way it is taken and given back", "[buffer_pool]") {
  constexpr std::size_t count = 3;
  netio::BufferPool pool(count, 64);
  std::vector<netio::Buffer*> all;
  for (std::size_t i = 0; i < count; ++i) all.push_back(pool.try_acquire());
  for (auto* b : all) pool.release(b);
  std::array<std::atomic<int>, count> holders{};
  std::atomic<int> shared{0};
  std::atomic<int> timed_out{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        // Half the takes wait (the lock and the waiter count), half only try (the spare).
        netio::Buffer* b = (i + t) % 2 == 0 ? pool.acquire(10s) : pool.try_acquire();
        if (b == nullptr) {
          if ((i + t) % 2 == 0) ++timed_out;
          continue;
        }
        const auto index = static_cast<std::size_t>(std::find(all.begin(), all.end(), b) - all.begin());
        if (index == count || holders[index].fetch_add(1) != 0) ++shared;
        if (i % 7 == 0) std::this_thread::yield();
        if (index != count) holders[index].fetch_sub(1);
        pool.release(b);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(shared == 0);
  CHECK(timed_out == 0);
  CHECK(pool.available() == count);
}
