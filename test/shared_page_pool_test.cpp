// SPDX-License-Identifier: MIT
// Pages shared by many send sockets (netio::PagePool): the total stays bounded, and one
// stalled receiver takes at most its socket's share while the others keep delivering.
#include "netio/high_throughput_socket.hpp"
#include "netio/page_pool.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;

TEST_CASE("64 send sockets on one pool of 16 pages: a stalled receiver holds its share, the others deliver everything",
          "[page_pool][high_throughput][integration][volume]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr std::size_t sockets = 64;
  constexpr std::size_t per_socket = 200;
  constexpr std::size_t message_size = 1000;
  constexpr std::size_t page_size = 16 * 1024;
  netio::Context context(netio::test::context_options());

  auto pool = std::make_shared<netio::PagePool>(netio::PagePoolOptions{16, page_size, 0});
  REQUIRE(pool->per_connection() == 4);

  // One receiver nobody reads from, with room for a single page: its sender stalls.
  netio::HighThroughputReceiveOptions stalled_options;
  stalled_options.page_credits = 1;
  netio::HighThroughputReceiveSocket stalled(context, base, stalled_options);
  netio::HighThroughputReceiveSocket healthy(context, base);

  netio::HighThroughputSendOptions options;
  options.shared_pages = pool;
  options.flush_timeout = 1ms;
  options.send_timeout = 2s;
  // Its close at the end gives up on the pages the stalled receiver never takes after this,
  // not after 2 s: over shm:// (a ring of two entries at one credit, where TCP's kernel
  // buffers take them all) pages are still queued then. try_send() below never waits.
  auto stuck_options = options;
  stuck_options.send_timeout = 100ms;
  netio::HighThroughputSendSocket stuck(context, stalled.local_endpoint(), stuck_options);
  std::vector<std::unique_ptr<netio::HighThroughputSendSocket>> senders;
  for (std::size_t i = 0; i + 1 < sockets; ++i) {
    senders.push_back(std::make_unique<netio::HighThroughputSendSocket>(context, healthy.local_endpoint(), options));
  }

  // Fill the stalled connection until it refuses: it stops at its share of the pool.
  std::vector<std::byte> message(message_size, std::byte{0x42});
  std::size_t stuck_sent = 0;
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < give_up) {
    if (stuck.try_send(message)) {
      ++stuck_sent;
    } else {
      std::this_thread::sleep_for(5ms);  // pages may still be on their way to the kernel
      if (!stuck.try_send(message)) break;
      ++stuck_sent;
    }
  }
  INFO("the stalled connection took " << stuck_sent << " messages");
  CHECK(stuck_sent > 0);
  CHECK(pool->pages_in_use() <= pool->per_connection());

  // Everyone else sends, from 4 threads; everything arrives.
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (std::size_t i = 0; i < per_socket; ++i) {
          for (std::size_t s = t; s < senders.size(); s += 4) {
            std::vector<std::byte> numbered(message_size);
            const std::uint64_t n = i;
            std::memcpy(numbered.data(), &n, sizeof n);
            std::memcpy(numbered.data() + sizeof n, &s, sizeof s);
            senders[s]->send(numbered);
          }
        }
        for (std::size_t s = t; s < senders.size(); s += 4) senders[s]->flush();
      } catch (const netio::Error&) {
        ++failures;
      }
    });
  }
  std::vector<std::uint64_t> next(senders.size(), 0);
  std::size_t received = 0;
  std::size_t out_of_order = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (received < senders.size() * per_socket && std::chrono::steady_clock::now() < deadline) {
    healthy.recv_each(1024, 100ms, [&](std::span<const std::byte> bytes, const netio::Peer&) {
      std::uint64_t n = 0;
      std::size_t s = 0;
      std::memcpy(&n, bytes.data(), sizeof n);
      std::memcpy(&s, bytes.data() + sizeof n, sizeof s);
      if (s >= next.size() || next[s]++ != n) ++out_of_order;
      ++received;
      return true;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(received == senders.size() * per_socket);
  CHECK(out_of_order == 0);
  // The pool bounded everyone's memory together.
  CHECK(pool->peak_pages_in_use() <= 16);
  CHECK(pool->bytes_allocated() <= 16 * page_size);
  senders.clear();
}

TEST_CASE("a page pool serves one back-end: a socket of another is refused, naming it", "[page_pool][fabric]") {
  if (!netio::test::fabric_built()) return;
  netio::Context a(netio::test::context_options());
  netio::Context b(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(a, Endpoint::parse("fabric://127.0.0.1:0?provider=tcp"));
  auto pool = std::make_shared<netio::PagePool>(netio::PagePoolOptions{8, 64 * 1024, 0});
  netio::HighThroughputSendOptions options;
  options.shared_pages = pool;
  netio::HighThroughputSendSocket first(a, receiver.local_endpoint(), options);
  try {
    netio::HighThroughputSendSocket second(b, receiver.local_endpoint(), options);
    FAIL("a socket of another back-end drew from the pool");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);  // misuse (docs/design/conventions.md)
    CHECK_THAT(e.what(), Catch::Contains(receiver.local_endpoint().to_string()) && Catch::Contains("page pool"));
  }
}

TEST_CASE("a page pool's per-connection share defaults to a quarter of it", "[page_pool]") {
  CHECK(netio::PagePool(netio::PagePoolOptions{16, 4096, 0}).per_connection() == 4);
  CHECK(netio::PagePool(netio::PagePoolOptions{4, 4096, 0}).per_connection() == 2);
  CHECK(netio::PagePool(netio::PagePoolOptions{1, 4096, 0}).per_connection() == 1);
  CHECK(netio::PagePool(netio::PagePoolOptions{16, 4096, 7}).per_connection() == 7);
  CHECK(netio::PagePool(netio::PagePoolOptions{16, 4096, 99}).per_connection() == 16);
  CHECK_THROWS_AS(netio::PagePool(netio::PagePoolOptions{0, 4096, 0}), netio::Error);
}
