// SPDX-License-Identifier: MIT
// High-throughput sockets over real loopback connections, on every back-end.
#include "netio/high_throughput_socket.hpp"
#include "handshake.hpp"
#include "kernel_tcp.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/internal/little_endian.hpp"
#include "page_format.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::pattern;

namespace {

netio::HighThroughputSendOptions small_pages(std::size_t page_size = 64 * 1024, std::size_t count = 8) {
  netio::HighThroughputSendOptions options;
  options.page_size = page_size;
  options.page_count = count;
  return options;
}

// flush_and_wait() on a producer thread, where REQUIRE must not run: a timeout throws, and
// the future's get() rethrows it on the test's thread.
void flush_or_throw(netio::HighThroughputSendSocket& sender, std::chrono::nanoseconds timeout) {
  if (!sender.flush_and_wait(timeout)) throw netio::Error(netio::Errc::timeout, "flush_and_wait() timed out");
}

// Sends pattern(sizes[i], i) for every i from another thread, then flushes; checks that the
// receiver gets each message, in order and intact.
void send_and_expect(netio::HighThroughputSendSocket& sender, netio::HighThroughputReceiveSocket& receiver,
                     const std::vector<std::size_t>& sizes) {
  auto producer = std::async(std::launch::async, [&] {
    for (std::size_t i = 0; i < sizes.size(); ++i) sender.send(pattern(sizes[i], i));
    flush_or_throw(sender, 10s);
  });
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto message = receiver.recv(10s);
    REQUIRE(message);
    const auto expected = pattern(sizes[i], i);
    const auto bytes = message->bytes();
    if (!std::equal(bytes.begin(), bytes.end(), expected.begin(), expected.end())) {
      FAIL("message " << i << " of " << sizes[i] << " bytes arrived changed (" << bytes.size() << " bytes)");
    }
  }
  producer.get();
}

// A receive socket that takes 2 pages and then stops reading, and a sender with
// close_awaits_receiver that has sent it `messages` messages (about 20 pages of 4 KiB: the
// rest wait in the kernel's buffers over TCP, for credits over libfabric) and begun its
// close. `outcome` gets "" when the close succeeds, else its error.
struct AwaitedClose {
  static constexpr int messages = 80;

  AwaitedClose(netio::Context& context, const Endpoint& base) {
    netio::HighThroughputReceiveOptions receive_options;
    receive_options.page_credits = 2;
    receiver = std::make_unique<netio::HighThroughputReceiveSocket>(context, base, receive_options);
    auto options = small_pages(4096, 32);
    options.close_awaits_receiver = true;
    sender = std::make_unique<netio::HighThroughputSendSocket>(context, receiver->local_endpoint(), options);
    for (int i = 0; i < messages; ++i) sender->send(message);
    sender->close([this](const netio::Error* error) { closed.set_value(error ? error->what() : ""); });
  }

  const std::vector<std::byte> message = pattern(1000, 3);
  std::promise<std::string> closed;  // declared before the sockets: it outlives the sender
  std::future<std::string> outcome = closed.get_future();
  std::unique_ptr<netio::HighThroughputReceiveSocket> receiver;
  std::unique_ptr<netio::HighThroughputSendSocket> sender;
};

}  // namespace

TEST_CASE("1,000,000 small messages arrive complete, in order and intact", "[high_throughput][integration][volume]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages());
  constexpr std::uint64_t n = 1'000'000;

  auto producer = std::async(std::launch::async, [&] {
    std::array<std::byte, 24> m{};
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t fields[3] = {i, ~i, i * 0x9E3779B97F4A7C15ull};
      std::memcpy(m.data(), fields, sizeof fields);
      sender.send(std::span(m).first(8 + i % 17));  // 8 to 24 bytes
    }
    flush_or_throw(sender, 30s);
  });
  std::uint64_t bad = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto message = receiver.recv(30s);
    REQUIRE(message);
    std::uint64_t fields[3] = {};
    std::memcpy(fields, message->data(), message->size());
    const std::uint64_t expected[3] = {i, ~i, i * 0x9E3779B97F4A7C15ull};
    if (message->size() != 8 + i % 17 || std::memcmp(fields, expected, message->size()) != 0) ++bad;
  }
  producer.get();
  CHECK(bad == 0);
  CHECK_FALSE(receiver.try_recv());
  const auto stats = sender.stats();
  CHECK(stats.messages == n);
  CHECK(stats.pages >= stats.flushes_full);
  CHECK(receiver.stats().messages == n);
}

TEST_CASE("messages of 3x the page size are split and reassembled", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const bool busy_poll = GENERATE(false, true);  // large frames read straight into their buffers
  INFO("busy polling: " << busy_poll);
  netio::Context context(
      netio::test::context_options({.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}}));
  netio::HighThroughputReceiveSocket receiver(context, base);
  const std::size_t page = 64 * 1024;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(page, 4));
  const std::vector<std::size_t> sizes = {3 * page, 10, 3 * page + 5, 3 * page - 8, 0, 7 * page};
  send_and_expect(sender, receiver, sizes);
}

TEST_CASE("large messages go out from the caller's memory, between small ones, intact and in order",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  const std::size_t page = 64 * 1024;
  auto options = small_pages(page, 4);
  options.zero_copy_threshold = 32 * 1024;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  // At and above the threshold: one frame, exactly a page, several pages, more frames than
  // the sender lends at once (8), and a page minus the length's 8 bytes.
  const std::vector<std::size_t> sizes = {10, 32 * 1024,     100, page,     3 * page + 5,
                                          0,  20 * page + 1, 7,   page - 8, 31 * 1024};
  std::size_t large = 0;
  auto producer = std::async(std::launch::async, [&] {
    std::vector<std::byte> buffer;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      buffer = pattern(sizes[i], i);
      sender.send(buffer);
      if (sizes[i] >= options.zero_copy_threshold) ++large;
      // send() has returned: the memory is the caller's again, and scribbling over it
      // must not reach the receiver.
      std::fill(buffer.begin(), buffer.end(), std::byte{0xEE});
    }
    flush_or_throw(sender, 10s);
  });
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto message = receiver.recv(10s);
    REQUIRE(message);
    INFO("message " << i << " of " << sizes[i] << " bytes");
    CHECK(std::vector<std::byte>(message->bytes().begin(), message->bytes().end()) == pattern(sizes[i], i));
  }
  producer.get();
  CHECK_FALSE(receiver.try_recv());
  const auto stats = sender.stats();
  CHECK(stats.messages == sizes.size());
  CHECK(stats.zero_copy_messages == large);
  CHECK(large == 5);
}

TEST_CASE("pages and lent frames stay within what the back-end sends at full speed", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  const std::size_t page = 1024 * 1024;
  // POSIX cuts its own writes and fills whole pages; libfabric's tcp provider writes each
  // buffer in one call, so its pages are filled to the kernel-friendly size only.
  const std::size_t capacity = base.scheme == "fabric" ? netio::detail::kernel_tcp_write_limit : page;
  auto options = small_pages(page, 8);
  options.zero_copy_threshold = 2 * page;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  // 6144 copied messages of 1 KiB, then two lent from the caller's memory.
  constexpr std::size_t small_count = 6144;
  const std::size_t small = 1024;
  const std::vector<std::size_t> large_sizes = {2 * page, 5 * page / 2 + 3};
  auto producer = std::async(std::launch::async, [&] {
    for (std::size_t i = 0; i < small_count; ++i) sender.send(pattern(small, i));
    flush_or_throw(sender, 10s);
    for (std::size_t i = 0; i < large_sizes.size(); ++i) sender.send(pattern(large_sizes[i], small_count + i));
    flush_or_throw(sender, 10s);
  });
  for (std::size_t i = 0; i < small_count + large_sizes.size(); ++i) {
    auto message = receiver.recv(10s);
    REQUIRE(message);
    const std::size_t size = i < small_count ? small : large_sizes[i - small_count];
    const auto expected = pattern(size, i);
    const auto bytes = message->bytes();
    if (!std::equal(bytes.begin(), bytes.end(), expected.begin(), expected.end())) {
      FAIL("message " << i << " of " << size << " bytes arrived changed (" << bytes.size() << " bytes)");
    }
  }
  producer.get();
  const auto stats = sender.stats();
  CHECK(stats.zero_copy_messages == large_sizes.size());
  // Copied pages hold `capacity` bytes at most and are filled up to it (a message continues
  // in the next page; one that cannot take a length goes out with up to 7 bytes unused), so
  // the first part takes ceil(bytes / capacity) pages, or one more. Each lent message is a
  // page with its length, then ceil(size / capacity) frames.
  const std::size_t copied = small_count * (small + netio::detail::message_header_size);
  std::size_t lent = large_sizes.size();
  for (const std::size_t size : large_sizes) lent += (size + capacity - 1) / capacity;
  INFO("pages " << stats.pages << ", capacity " << capacity);
  CHECK(stats.pages >= (copied + capacity - 1) / capacity + lent);
  CHECK(stats.pages <= (copied + capacity - 1) / capacity + 1 + lent);
}

TEST_CASE("without a zero-copy threshold, what is lent follows the back-end", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  const std::size_t page = 1024 * 1024;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(page, 8));
  REQUIRE(sender.wait_connected(5s));
  // POSIX lends from 256 KiB on. libfabric's tcp provider fills pages to 768 KiB and lends
  // from two of those on: below, the extra buffer for the length costs more than the copy.
  const std::size_t threshold = base.scheme == "fabric" ? 2 * netio::detail::kernel_tcp_write_limit
                                                        : netio::HighThroughputSendOptions::default_zero_copy_threshold;
  const std::vector<std::size_t> sizes = {256 * 1024 - 1, 256 * 1024, page, 3 * page / 2 - 1, 3 * page / 2, 2 * page};
  std::size_t lent = 0;
  for (const std::size_t size : sizes) lent += size >= threshold ? 1 : 0;
  send_and_expect(sender, receiver, sizes);
  CHECK(sender.stats().zero_copy_messages == lent);
  CHECK(lent == (base.scheme == "fabric" ? 2 : 5));
}

TEST_CASE("a large message that cannot be sent in time closes the connection, and the caller's memory is free again",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 1;
  netio::HighThroughputReceiveSocket receiver(context, base, receive_options);
  auto options = small_pages(64 * 1024, 2);
  options.zero_copy_threshold = 64 * 1024;
  options.send_timeout = 300ms;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  // Nobody reads: the kernel buffers fill up and a 1 MiB send cannot finish.
  std::vector<std::byte> buffer = pattern(1024 * 1024, 1);
  std::optional<netio::Error> error;
  for (int i = 0; i < 1000 && !error; ++i) {
    try {
      sender.send(buffer);
    } catch (const netio::Error& e) {
      error = e;
    }
  }
  REQUIRE(error);
  CHECK(error->code() == netio::Errc::timeout);
  CHECK_THAT(error->what(), Catch::Contains("connection was closed"));
  buffer.assign(buffer.size(), std::byte{0});  // the back-end let go of it
  CHECK_THROWS_AS(sender.send(pattern(10, 2)), netio::Error);
  CHECK(sender.stats().zero_copy_messages >= 1);
  // The receiver gets every message before the torn one, then drops the connection.
  std::size_t intact = 0;
  while (auto m = receiver.recv(500ms)) {
    if (m->size() == buffer.size()) ++intact;
  }
  CHECK(intact + 1 <= sender.stats().zero_copy_messages);
  CHECK(eventually([&] { return receiver.stats().disconnects == 1; }));
}

TEST_CASE("the flush timer delivers a lone small message within the timeout", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  auto options = small_pages();
  options.flush_timeout = 600ms;  // long beside the slack a loaded machine needs (below)
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));
  const auto start = std::chrono::steady_clock::now();
  sender.send(pattern(16, 1));
  auto message = receiver.recv(5s);
  const auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE(message);
  CHECK(message->size() == 16);
  // Sent by the timer, not early by anything else, and no later than one period (+ slack
  // for a loaded machine: CI runs two tests per core, under sanitizers).
  CHECK(sender.stats().flushes_timer == 1);
  CHECK(sender.stats().flushes_full == 0);
  CHECK(waited <= 600ms + 400ms);
}

TEST_CASE("explicit flush sends a partly filled page at once", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  auto options = small_pages();
  options.flush_timeout = 60s;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  sender.send(pattern(100, 3));
  sender.flush();
  auto message = receiver.recv(5s);
  REQUIRE(message);
  CHECK(sender.stats().flushes_explicit == 1);
}

TEST_CASE("a stalled receiver makes the sender wait with bounded memory, reading resumes delivery",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // Busy polling: the stalled reader leaves epoll and comes back to a spinning loop.
  const bool busy_poll = GENERATE(false, true);
  INFO("busy polling: " << busy_poll);
  netio::Context context(
      netio::test::context_options({.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}}));
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.page_credits = 2;
  netio::HighThroughputReceiveSocket receiver(context, base, receive_options);
  auto options = small_pages(64 * 1024, 4);
  options.send_timeout = 200ms;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  REQUIRE(sender.wait_connected(5s));

  // Nobody calls recv(): kernel buffers, receive credits and the 4 pages fill up, and then
  // send() must give up after its timeout instead of buffering without bound.
  const auto chunk = pattern(4096, 5);
  std::uint64_t sent = 0;
  bool timed_out = false;
  while (!timed_out && sent < 1'000'000) {
    if (!sender.try_send(chunk)) {
      try {
        sender.send(chunk);
        ++sent;
      } catch (const netio::Error& e) {
        CHECK(e.code() == netio::Errc::timeout);
        timed_out = true;
      }
    } else {
      ++sent;
    }
  }
  REQUIRE(timed_out);
  const auto stats = sender.stats();
  CHECK(stats.backpressure_waits >= 1);
  CHECK(stats.messages == sent);
  // Bounded: what was accepted fits in the pool, the receiver's credits and kernel buffers.
  CHECK(sent * chunk.size() < 64u << 20);

  std::uint64_t received = 0;
  auto drained = std::async(std::launch::async, [&] {
    while (received < sent) {
      auto m = receiver.recv(10s);
      if (!m) return;
      if (std::memcmp(m->data(), chunk.data(), chunk.size()) == 0) ++received;
    }
  });
  REQUIRE(sender.flush_and_wait(20s));  // flows again now that the receiver reads
  drained.get();
  CHECK(received == sent);
}

TEST_CASE("with close_awaits_receiver, a close ends only once the receiver has read everything",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  AwaitedClose run(context, base);
  CHECK(run.outcome.wait_for(300ms) == std::future_status::timeout);  // nobody has read yet
  int received = 0;
  while (received < AwaitedClose::messages) {
    auto m = run.receiver->recv(5s);
    if (!m) break;
    if (std::equal(m->bytes().begin(), m->bytes().end(), run.message.begin(), run.message.end())) ++received;
  }
  CHECK(received == AwaitedClose::messages);
  REQUIRE(run.outcome.wait_for(10s) == std::future_status::ready);
  CHECK(run.outcome.get().empty());
}

TEST_CASE("with close_awaits_receiver, a close fails when the receiver goes without reading everything",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  AwaitedClose run(context, base);
  CHECK(run.outcome.wait_for(300ms) == std::future_status::timeout);  // nobody has read yet
  // The receiver goes with most pages unread (over TCP its close resets the connection).
  run.receiver.reset();
  REQUIRE(run.outcome.wait_for(10s) == std::future_status::ready);
  const std::string error = run.outcome.get();
  INFO("the close reported: " << (error.empty() ? "success" : error));
  CHECK(!error.empty());
}

TEST_CASE("a sender of an oversized length, a truncated page or junk is disconnected, others are not disturbed",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const auto kind = GENERATE(as<std::string>{}, "oversized length", "truncated page", "junk");
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.max_message_size = 1 << 20;
  netio::HighThroughputReceiveSocket receiver(context, base, receive_options);
  netio::HighThroughputSendSocket good(context, receiver.local_endpoint(), small_pages());
  good.send(pattern(100, 1));
  good.flush();
  auto first = receiver.recv(5s);
  REQUIRE(first);

  // A hand-made peer on the raw back-end: a correct hello, then a bad page.
  auto& backend = context.backend(base.scheme);
  std::unique_ptr<netio::LowLevelSendSocket> rogue;
  std::unique_ptr<netio::BufferPool> pool;
  std::promise<void> connected;
  std::atomic<bool> disconnected{false};
  context.loop().run_sync([&] {
    rogue = backend.make_send_socket();
    pool = std::make_unique<netio::BufferPool>(1, 4096, rogue->registrar());
    netio::LowLevelSendSocket::Callbacks callbacks;
    callbacks.on_connected = [&](const netio::ConnectionInfo&) { connected.set_value(); };
    callbacks.on_disconnected = [&](const netio::Error&) { disconnected = true; };
    const auto hello = netio::detail::encode_hello({netio::detail::SocketKind::high_throughput_send, 4096});
    rogue->connect(receiver.local_endpoint(), hello, std::move(callbacks));
  });
  REQUIRE(connected.get_future().wait_for(5s) == std::future_status::ready);
  netio::Buffer* page = pool->try_acquire();
  if (kind == "oversized length") {
    netio::detail::store_le<std::uint64_t>(page->data, (1 << 20) + 1);
    page->size = 64;
  } else if (kind == "truncated page") {
    netio::detail::store_le<std::uint64_t>(page->data, 4);
    page->size = 8 + 4 + 3;
  } else {
    std::memset(page->data, 0xA5, 64);
    page->size = 64;
  }
  context.loop().run_sync([&] { rogue->send(page); });
  // Pages are parsed lazily by recv(): that is where the damage is found. What precedes
  // it in the page is intact and delivered (the truncated page starts with a valid
  // 4-byte message); nothing else may come out of the bad page.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!disconnected && std::chrono::steady_clock::now() < deadline) {
    if (auto m = receiver.recv(20ms)) {
      CHECK(kind == "truncated page");
      CHECK(m->size() == 4);
    }
  }
  REQUIRE(disconnected);
  CHECK(receiver.stats().disconnects >= 1);

  good.send(pattern(200, 2));  // the good sender carries on
  good.flush();
  std::optional<netio::Message> second;
  for (int i = 0; i < 3 && !(second && second->size() == 200); ++i) second = receiver.recv(5s);
  REQUIRE(second);
  CHECK(std::vector<std::byte>(second->bytes().begin(), second->bytes().end()) == pattern(200, 2));
  context.loop().run_sync([&] { rogue->close(); });
}

TEST_CASE("recv_each hands out batches in order, stops when the handler says so, and waits only for the first",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(4096, 8));
  // Small ones (several pages of them) and one that spans pages (reassembled).
  constexpr std::uint64_t n = 2000;
  auto size_of = [](std::uint64_t i) -> std::size_t { return i == 1500 ? 10'000 : 8 + i % 40; };
  auto producer = std::async(std::launch::async, [&] {
    for (std::uint64_t i = 0; i < n; ++i) sender.send(pattern(size_of(i), i));
    flush_or_throw(sender, 10s);
  });
  std::uint64_t next = 0, bad = 0;
  auto check = [&](std::span<const std::byte> m) {
    if (!std::equal(m.begin(), m.end(), pattern(size_of(next), next).begin()) || m.size() != size_of(next)) ++bad;
    ++next;
    return true;
  };
  // A handler that stops after the third message: exactly three are taken.
  std::size_t calls = 0;
  CHECK(receiver.recv_each(100, 5s, [&](std::span<const std::byte> m) {
    check(m);
    return ++calls < 3;
  }) == 3);
  CHECK(next == 3);
  while (next < n) {
    const std::size_t got = receiver.recv_each(256, 5s, check);
    REQUIRE(got > 0);
    CHECK(got <= 256);
  }
  producer.get();
  CHECK(next == n);
  CHECK(bad == 0);
  CHECK(receiver.stats().messages == n);
  // Nothing left: it waits for the first message until the timeout, then returns 0.
  const auto start = std::chrono::steady_clock::now();
  CHECK(receiver.recv_each(10, 100ms, check) == 0);
  CHECK(std::chrono::steady_clock::now() - start >= 100ms);
  // recv() and recv_each() take turns on one stream.
  sender.send(pattern(16, 7));
  sender.send(pattern(16, 8));
  REQUIRE(sender.flush_and_wait(5s));
  auto first = receiver.recv(5s);
  REQUIRE(first);
  CHECK(std::vector<std::byte>(first->bytes().begin(), first->bytes().end()) == pattern(16, 7));
  std::vector<std::byte> second;
  CHECK(receiver.recv_each(10, 5s, [&](std::span<const std::byte> m) {
    second.assign(m.begin(), m.end());
    return true;
  }) == 1);
  CHECK(second == pattern(16, 8));
}

TEST_CASE("recv_each reassembles the messages of two senders in the memory the previous one left, intact",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  const std::size_t page = 16 * 1024;
  // Sender "s0" sends pattern(size, i), "s1000" pattern(size, 1000 + i).
  auto sender_options = [&](std::uint64_t salt) {
    auto options = small_pages(page, 8);
    options.identity.name = "s" + std::to_string(salt);
    return options;
  };
  netio::HighThroughputSendSocket first(context, receiver.local_endpoint(), sender_options(0));
  netio::HighThroughputSendSocket second(context, receiver.local_endpoint(), sender_options(1000));
  // Page-spanning messages growing and shrinking (each reassembly starts in the last one's
  // memory, which must grow for some), between small ones; two connections at once.
  auto size_of = [&](std::uint64_t i) -> std::size_t {
    const std::size_t spans[] = {2 * page + 100, 5 * page, page + 1, 9 * page + 7, 3 * page};
    return i % 3 == 2 ? 40 : spans[i % 5];
  };
  constexpr std::uint64_t n = 60;
  auto send_all = [&](netio::HighThroughputSendSocket& sender, std::uint64_t salt) {
    for (std::uint64_t i = 0; i < n; ++i) sender.send(pattern(size_of(i), salt + i));
    flush_or_throw(sender, 10s);
  };
  auto a = std::async(std::launch::async, send_all, std::ref(first), 0);
  auto b = std::async(std::launch::async, send_all, std::ref(second), 1000);
  std::map<std::string, std::uint64_t> next;  // per sender
  std::uint64_t taken = 0, bad = 0;
  while (taken < 2 * n) {
    const std::size_t got = receiver.recv_each(16, 5s, [&](std::span<const std::byte> m, const netio::Peer& peer) {
      auto& i = next[peer.name()];
      const auto want = pattern(size_of(i), std::stoull(peer.name().substr(1)) + i);
      if (!std::equal(m.begin(), m.end(), want.begin(), want.end())) ++bad;
      ++i;
      ++taken;
      return true;
    });
    REQUIRE(got > 0);
  }
  a.get();
  b.get();
  CHECK(bad == 0);
  CHECK(next == std::map<std::string, std::uint64_t>{{"s0", n}, {"s1000", n}});
}

TEST_CASE("a reassembled message from recv() gives its memory back to the socket, and may outlive it",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  auto receiver = std::make_unique<netio::HighThroughputReceiveSocket>(context, base);
  const std::size_t page = 16 * 1024;
  netio::HighThroughputSendSocket sender(context, receiver->local_endpoint(), small_pages(page, 8));
  auto producer = std::async(std::launch::async, [&] {  // more pages than the receiver's credits
    for (std::uint64_t i = 0; i < 3; ++i) sender.send(pattern(5 * page, i));
    flush_or_throw(sender, 10s);
  });
  auto first = receiver->recv(10s);
  REQUIRE(first);
  CHECK(std::vector<std::byte>(first->bytes().begin(), first->bytes().end()) == pattern(5 * page, 0));
  // Held by the caller, its memory is the caller's; given back, the socket keeps it for the
  // next reassembly and counts it whole.
  const std::size_t held = receiver->memory_budget().used();
  first.reset();
  CHECK(receiver->memory_budget().used() >= held + 5 * page);
  auto second = receiver->recv(10s);
  REQUIRE(second);
  CHECK(std::vector<std::byte>(second->bytes().begin(), second->bytes().end()) == pattern(5 * page, 1));
  auto third = receiver->recv(10s);
  REQUIRE(third);
  producer.get();
  receiver.reset();  // the socket goes first: the messages keep their bytes, and free them
  CHECK(std::vector<std::byte>(second->bytes().begin(), second->bytes().end()) == pattern(5 * page, 1));
  CHECK(std::vector<std::byte>(third->bytes().begin(), third->bytes().end()) == pattern(5 * page, 2));
}

TEST_CASE("a zero-copy message keeps its page alive after later recv() calls", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(4096, 4));
  for (int i = 0; i < 100; ++i) sender.send(pattern(100, i));
  REQUIRE(sender.flush_and_wait(5s));
  std::vector<netio::Message> kept;
  for (int i = 0; i < 100; ++i) {
    auto m = receiver.recv(5s);
    REQUIRE(m);
    if (i % 10 == 0) kept.push_back(std::move(*m));
  }
  for (std::size_t k = 0; k < kept.size(); ++k) {
    CHECK(std::vector<std::byte>(kept[k].bytes().begin(), kept[k].bytes().end()) == pattern(100, k * 10));
  }
}

TEST_CASE("a sender with pages beyond the receiver's maximum is rejected", "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.max_page_size = 64 * 1024;
  netio::HighThroughputReceiveSocket receiver(context, base, receive_options);
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(128 * 1024, 2));
  try {
    if (!sender.wait_connected(5s)) FAIL("timed out");
    FAIL("connected with oversized pages");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(), Catch::Contains("page size 131072"));
  }
}

TEST_CASE("send() from 4 threads mixing small and page-spanning messages: all intact, in order per thread",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  auto options = small_pages(4096, 8);
  options.flush_timeout = 1ms;              // the timer keeps taking partly filled pages away meanwhile
  options.zero_copy_threshold = 12 * 1024;  // the largest go out from the callers' memory
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  constexpr std::uint64_t threads = 4;
  constexpr std::uint64_t per_thread = 3000;
  // Small ones go through the one-lock path, every 7th spans pages (the reserving path, or
  // from 12 KiB on the zero-copy one).
  auto size_of = [](std::uint64_t seq) -> std::size_t {
    return seq % 7 == 0 ? 16 + (seq * 977) % 20000 : 16 + seq % 100;
  };
  std::vector<std::thread> workers;
  for (std::uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::uint64_t seq = 0; seq < per_thread; ++seq) {
        auto m = pattern(size_of(seq), seq * threads + t);
        std::memcpy(m.data(), &t, 8);
        std::memcpy(m.data() + 8, &seq, 8);
        sender.send(m);
      }
    });
  }
  std::array<std::uint64_t, threads> next{};
  std::uint64_t broken = 0;
  for (std::uint64_t i = 0; i < threads * per_thread; ++i) {
    auto m = receiver.recv(20s);
    REQUIRE(m);
    std::uint64_t header[2] = {};
    REQUIRE(m->size() >= 16);
    std::memcpy(header, m->data(), sizeof header);
    const auto [t, seq] = std::pair(header[0], header[1]);
    if (t >= threads || seq != next[t]++ || m->size() != size_of(seq) ||
        !std::equal(m->bytes().begin() + 16, m->bytes().end(), pattern(m->size(), seq * threads + t).begin() + 16)) {
      ++broken;
    }
  }
  for (auto& w : workers) w.join();
  CHECK(broken == 0);
  CHECK(sender.stats().flushes_timer > 0);
  CHECK(sender.stats().zero_copy_messages > 0);
}

TEST_CASE("recv() from 3 threads at once: every message goes to exactly one of them",
          "[high_throughput][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket receiver(context, base);
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), small_pages(4096, 8));
  constexpr std::uint64_t n = 60'000;
  std::vector<std::atomic<int>> seen(n);
  std::atomic<std::uint64_t> total{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < 3; ++c) {
    consumers.emplace_back([&] {
      while (total < n) {
        auto m = receiver.recv(50ms);  // short: contended waits time out and retry
        if (!m) continue;
        std::uint64_t i = 0;
        std::memcpy(&i, m->data(), sizeof i);
        if (i < n) ++seen[i];
        ++total;
      }
    });
  }
  for (std::uint64_t i = 0; i < n; ++i) sender.send(std::as_bytes(std::span(&i, 1)));
  REQUIRE(sender.flush_and_wait(10s));
  for (auto& c : consumers) c.join();
  CHECK(total == n);
  std::uint64_t not_once = 0;
  for (auto& s : seen) not_once += s != 1;
  CHECK(not_once == 0);
}
