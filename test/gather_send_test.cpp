// SPDX-License-Identifier: MIT
// Messages given as several parts (send_parts / try_send_parts): packed as if joined.
#include "page_format.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

using netio::Endpoint;
using netio::test::eventually;
using netio::test::pattern;
using namespace std::chrono_literals;

namespace {

// `message` cut at up to three random points (empty parts included).
std::vector<std::span<const std::byte>> cut(std::span<const std::byte> message, std::mt19937_64& random) {
  std::vector<std::size_t> cuts{0, message.size()};
  for (int i = 0; i < 3; ++i) cuts.push_back(std::uniform_int_distribution<std::size_t>(0, message.size())(random));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::span<const std::byte>> parts;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) parts.push_back(message.subspan(cuts[i], cuts[i + 1] - cuts[i]));
  return parts;
}

}  // namespace

TEST_CASE("a message packed from parts gives the same pages as the message packed whole", "[page_format]") {
  std::mt19937_64 random(17);
  constexpr std::size_t page_size = 1000;
  std::vector<std::byte> whole_pages(page_size), part_pages(page_size);
  std::size_t whole_used = 0, part_used = 0;
  for (std::uint64_t m = 0; m < 2000; ++m) {
    const auto message = pattern(std::uniform_int_distribution<std::size_t>(0, 3 * page_size)(random), m);
    const auto parts = cut(message, random);
    netio::detail::MessagePacker whole(message);
    netio::detail::MessagePacker joined(parts, netio::detail::total_size(parts));
    REQUIRE(joined.size() == message.size());
    while (!whole.done()) {
      whole.fill(whole_pages.data(), whole_used, page_size);
      joined.fill(part_pages.data(), part_used, page_size);
      REQUIRE(whole_used == part_used);
      REQUIRE(whole_pages == part_pages);
      if (netio::detail::MessagePacker::page_full(whole_used, page_size)) whole_used = part_used = 0;
    }
    REQUIRE(joined.done());
  }
}

TEST_CASE("messages sent as parts arrive joined, in order, on both kinds of socket", "[gather][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  constexpr std::uint64_t n = 2000;
  std::mt19937_64 random(5);
  std::vector<std::vector<std::byte>> messages;
  for (std::uint64_t i = 0; i < n; ++i) {
    messages.push_back(pattern(std::uniform_int_distribution<std::size_t>(0, 40'000)(random), i));
  }

  SECTION("high throughput (pages of 16 KiB, messages spanning them)") {
    netio::HighThroughputReceiveSocket receiver(context, base);
    netio::HighThroughputSendOptions options;
    options.page_size = 16 * 1024;
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
    std::thread sending([&] {
      std::mt19937_64 cuts(9);
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto parts = cut(messages[i], cuts);
        if (i % 2 == 0)
          sender.send_parts(parts);
        else
          while (!sender.try_send_parts(parts)) std::this_thread::sleep_for(100us);
      }
      sender.flush();
    });
    std::size_t broken = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      auto m = receiver.recv(10s);
      if (!m) break;
      if (!std::equal(m->bytes().begin(), m->bytes().end(), messages[i].begin(), messages[i].end())) ++broken;
    }
    sending.join();
    CHECK(broken == 0);
    CHECK(receiver.stats().messages == n);
  }

  SECTION("low latency") {
    std::mutex mutex;
    std::vector<std::vector<std::byte>> received;
    netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte> m, const netio::Peer&) {
      std::lock_guard lock(mutex);
      received.emplace_back(m.begin(), m.end());
    });
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    std::mt19937_64 cuts(9);
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto parts = cut(messages[i], cuts);
      if (i % 2 == 0)
        sender.send_parts(parts);
      else
        while (!sender.try_send_parts(parts)) std::this_thread::sleep_for(100us);
    }
    REQUIRE(eventually([&] {
      std::lock_guard lock(mutex);
      return received.size() == n;
    }));
    std::lock_guard lock(mutex);
    CHECK(received == messages);
  }
}
