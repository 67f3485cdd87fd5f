// SPDX-License-Identifier: MIT
// The emulated back-end over the real ones (tcp and fabric): buffers keep their order under
// random per-buffer delays, nothing is lost or duplicated, a shared incoming capacity holds
// several senders and still delivers everything, the configuration changes while running,
// close() drops what waits with no callback after it, and a disconnection comes after the
// data held before it. Timing is never asserted here (see emulation_shaping_test.cpp for
// rates and windows against an injected clock).
#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/error.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::AcceptDecision;
using netio::Buffer;
using netio::BufferPool;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::pattern;

namespace {

netio::ContextOptions emulated(const std::string& spec) {
  netio::ContextOptions options;
  options.emulation = netio::parse_emulation_spec(spec);
  return options;
}

// A listener on `context` that records what each accepted connection receives, in order.
class Sink {
 public:
  Sink(netio::Context& context, const Endpoint& base, std::size_t credits = 8) : context_(context) {
    run([&] {
      listener_ = context_.backend(base).make_listen_socket();
      netio::LowLevelListenSocket::Callbacks callbacks;
      callbacks.on_request = [credits](const Endpoint&, std::span<const std::byte>) {
        return AcceptDecision::accept(1 << 20, credits);
      };
      callbacks.on_accepted = [this](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
        const std::size_t index = receivers_.size();
        messages_.emplace_back();
        netio::LowLevelReceiveSocket::Callbacks cb;
        cb.on_data = [this, index](netio::ReceivedBuffer buffer) {
          std::lock_guard lock(mutex_);
          messages_[index].emplace_back(buffer.bytes().begin(), buffer.bytes().end());
          ++received;
        };
        cb.on_disconnected = [this, index](const netio::Error&) {
          std::lock_guard lock(mutex_);
          disconnect_after.push_back(messages_[index].size());
          ++disconnects;
        };
        socket->start(std::move(cb));
        receivers_.push_back(std::move(socket));
      };
      listener_->listen(base, std::move(callbacks));
      local = listener_->local_endpoint();
    });
  }
  ~Sink() {
    run([this] {
      for (auto& r : receivers_) r->close();
      receivers_.clear();
      listener_->close();
      listener_.reset();
    });
  }
  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }
  std::vector<std::vector<std::vector<std::byte>>> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

  Endpoint local;
  std::atomic<std::size_t> received{0};
  std::atomic<std::size_t> disconnects{0};
  std::vector<std::size_t> disconnect_after;  // guarded by mutex_

 private:
  netio::Context& context_;
  std::unique_ptr<netio::LowLevelListenSocket> listener_;
  std::vector<std::unique_ptr<netio::LowLevelReceiveSocket>> receivers_;  // loop thread
  std::vector<std::vector<std::vector<std::byte>>> messages_;             // guarded by mutex_
  std::mutex mutex_;
};

// A send socket on `context` with a pool, counting completions in order.
class Source {
 public:
  Source(netio::Context& context, const Endpoint& remote, std::size_t pool_buffers = 64) : context_(context) {
    run([&] {
      socket = context_.backend(remote).make_send_socket();
      netio::LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_connected = [this](const netio::ConnectionInfo&) { connected = true; };
      callbacks.on_connect_failed = [this](const netio::Error&) { failed = true; };
      callbacks.on_disconnected = [this](const netio::Error&) { failed = true; };
      callbacks.on_send_completed = [this](Buffer* buffer) {
        in_order = in_order && !outstanding.empty() && outstanding.front() == buffer;
        if (!outstanding.empty()) outstanding.erase(outstanding.begin());
        pool->release(buffer);
        ++completions;
      };
      socket->connect(remote, {}, std::move(callbacks));
      pool = std::make_unique<BufferPool>(pool_buffers, 4096, socket->registrar());
    });
    REQUIRE(eventually([this] { return connected || failed; }));
    REQUIRE(connected);
  }
  ~Source() { close(); }
  void close() {
    run([this] {
      if (socket) socket->close();
      socket.reset();
    });
  }
  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }

  // Sends message `seq`: its number, then pattern bytes. Waits for a free buffer (the pool
  // bounds what is in flight: delayed completions throttle the sender). False when no buffer
  // came free. Any thread (no Catch assertion in here).
  [[nodiscard]] bool send(std::uint64_t seq, std::size_t size) {
    Buffer* buffer = pool->acquire(30s);
    if (buffer == nullptr) return false;
    pool->reserve(buffer, size);
    const auto bytes = pattern(size, seq);
    std::memcpy(buffer->data, bytes.data(), size);
    std::memcpy(buffer->data, &seq, sizeof seq);
    buffer->size = size;
    run([&] {
      outstanding.push_back(buffer);
      socket->send(buffer);
    });
    return true;
  }

  std::unique_ptr<netio::LowLevelSendSocket> socket;
  std::unique_ptr<BufferPool> pool;
  std::vector<Buffer*> outstanding;  // loop thread
  bool in_order = true;              // loop thread
  std::atomic<bool> connected{false};
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> completions{0};

 private:
  netio::Context& context_;
};

std::size_t size_of(std::uint64_t seq) { return 8 + (seq * 7919) % 3000; }

// Each message of `got` is message k of the stream, intact, k = 0, 1, 2, ...
// Every source sends messages 0..count-1 from a thread of its own, all at once; returns how
// many sends failed.
int send_from_threads(std::vector<std::unique_ptr<Source>>& sources, std::size_t count) {
  std::vector<std::thread> threads;
  std::atomic<int> send_failures{0};
  for (auto& s : sources) {
    threads.emplace_back([&s, &send_failures, count] {
      for (std::uint64_t k = 0; k < count; ++k) {
        if (!s->send(k, size_of(k))) ++send_failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  return send_failures;
}

void check_stream(const std::vector<std::vector<std::byte>>& got, std::size_t count) {
  REQUIRE(got.size() == count);
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t seq = 0;
    REQUIRE(got[k].size() >= sizeof seq);
    std::memcpy(&seq, got[k].data(), sizeof seq);
    INFO("message " << k);
    REQUIRE(seq == k);
    auto expected = pattern(size_of(k), k);
    std::memcpy(expected.data(), &seq, sizeof seq);
    REQUIRE(got[k] == expected);
  }
}

}  // namespace

TEST_CASE("emulated: order kept under random per-buffer delays, nothing lost or duplicated",
          "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // A long tail: many draws would overtake the buffer before them.
  netio::Context context(emulated("delay=pareto:scale=5us,shape=1.2,clip=3ms;seed=11"));
  Sink sink(context, base);
  Source source(context, sink.local, 32);
  constexpr std::size_t count = 3000;
  for (std::uint64_t k = 0; k < count; ++k) REQUIRE(source.send(k, size_of(k)));
  REQUIRE(eventually([&] { return sink.received == count && source.completions == count; }, 60s));
  check_stream(sink.messages().at(0), count);
  source.run([&] { CHECK(source.in_order); });
  CHECK(context.emulation()->counters().buffers_delayed > count / 2);
  CHECK(context.emulation()->counters().bytes_sent > 0);
}

TEST_CASE("emulated: a shared incoming capacity holds every sender and delivers all", "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // 20 Mb/s: below what three senders offer even on a slow, sanitized build (at 200 Mb/s a
  // TSan run on a loaded 2-core VM sent so slowly that nothing ever had to be held).
  netio::Context receiving(emulated("in=20Mbps,burst=8KiB"));
  netio::Context sending(emulated("delay=uniform:min=0us,max=50us"));
  Sink sink(receiving, base, 4);
  constexpr std::size_t senders = 3;
  constexpr std::size_t count = 400;
  std::vector<std::unique_ptr<Source>> sources;
  for (std::size_t i = 0; i < senders; ++i) sources.push_back(std::make_unique<Source>(sending, sink.local, 16));
  REQUIRE(send_from_threads(sources, count) == 0);
  REQUIRE(eventually([&] { return sink.received == senders * count; }, 60s));
  const auto got = sink.messages();
  REQUIRE(got.size() == senders);
  for (const auto& stream : got) check_stream(stream, count);
  CHECK(receiving.emulation()->counters().buffers_held > 0);
  CHECK(receiving.emulation()->counters().bytes_received > 0);
}

TEST_CASE("emulated: a switch core shared by two nodes carries both, in order, and delivers all",
          "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // Two sending nodes whose out= add up to twice the core: the core (one per process and
  // clause) holds both, and each connection keeps its order through it.
  const std::string spec = "out=20Mbps,burst=8KiB;core=20Mbps,burst=8KiB";
  netio::Context receiving;
  netio::Context first(emulated(spec));
  netio::Context second(emulated(spec));
  Sink sink(receiving, base, 4);
  constexpr std::size_t count = 300;
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(std::make_unique<Source>(first, sink.local, 16));
  sources.push_back(std::make_unique<Source>(second, sink.local, 16));
  REQUIRE(send_from_threads(sources, count) == 0);
  REQUIRE(eventually([&] { return sink.received == 2 * count; }, 60s));
  const auto got = sink.messages();
  REQUIRE(got.size() == 2);
  for (const auto& stream : got) check_stream(stream, count);
  for (auto& s : sources) s->run([&] { CHECK(s->in_order); });
  CHECK(first.emulation()->counters().buffers_through_core == count);
  CHECK(second.emulation()->counters().buffers_through_core == count);
}

TEST_CASE("emulated: the configuration changes while running, later buffers use it", "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(emulated(""));
  Sink sink(context, base);
  Source source(context, sink.local);
  for (std::uint64_t k = 0; k < 100; ++k) REQUIRE(source.send(k, size_of(k)));
  REQUIRE(eventually([&] { return sink.received == 100; }));
  CHECK(context.emulation()->counters().buffers_delayed == 0);  // nothing to shape: straight through

  context.emulation()->set_spec("delay=constant:200us");
  for (std::uint64_t k = 100; k < 200; ++k) REQUIRE(source.send(k, size_of(k)));
  REQUIRE(eventually([&] { return sink.received == 200; }));
  CHECK(context.emulation()->counters().buffers_delayed >= 100);
  check_stream(sink.messages().at(0), 200);
  CHECK(context.emulation()->config().delay.kind == netio::DelayKind::constant);
  CHECK_THROWS_AS(context.emulation()->set_spec("delay=bogus"), netio::Error);
  CHECK(context.emulation()->config().delay.kind == netio::DelayKind::constant);  // the old one stays
}

TEST_CASE("emulated: a buffer given a delay counts as delayed though its due time passed before the loop got to it",
          "[emulated][integration]") {
  // 1 ns is over before the flow looks at the buffer again: it leaves from inside the send,
  // as a 200 us one does on a preempted thread. It was given a delay all the same.
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(emulated("delay=constant:1ns"));
  Sink sink(context, base);
  Source source(context, sink.local);
  for (std::uint64_t k = 0; k < 20; ++k) REQUIRE(source.send(k, size_of(k)));
  REQUIRE(eventually([&] { return sink.received == 20; }));
  CHECK(context.emulation()->counters().buffers_delayed == 20);
  check_stream(sink.messages().at(0), 20);
}

TEST_CASE("emulated: per endpoint, one link gets a delay of its own", "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(emulated(""));
  Sink fast(context, base);
  Sink slow(context, base);
  context.emulation()->set_link(slow.local, "delay=constant:1ms");
  Source to_fast(context, fast.local);
  Source to_slow(context, slow.local);
  for (std::uint64_t k = 0; k < 50; ++k) REQUIRE(to_fast.send(k, size_of(k)));
  REQUIRE(eventually([&] { return fast.received == 50; }));
  CHECK(context.emulation()->counters().buffers_delayed == 0);
  for (std::uint64_t k = 0; k < 50; ++k) REQUIRE(to_slow.send(k, size_of(k)));
  REQUIRE(eventually([&] { return slow.received == 50; }));
  CHECK(context.emulation()->counters().buffers_delayed == 50);  // every one waited its 1 ms
  check_stream(slow.messages().at(0), 50);
  context.emulation()->set_link(slow.local, std::nullopt);  // removed: straight through again
  for (std::uint64_t k = 50; k < 100; ++k) REQUIRE(to_slow.send(k, size_of(k)));
  REQUIRE(eventually([&] { return slow.received == 100; }));
  CHECK(context.emulation()->counters().buffers_delayed == 50);
  check_stream(slow.messages().at(0), 100);
}

TEST_CASE("emulated: close() drops what waits, and no callback comes after it", "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // The delay outlasts the sends and the close even on a loaded machine.
  netio::Context context(emulated("delay=500ms"));
  Sink sink(context, base);
  Source source(context, sink.local);
  for (std::uint64_t k = 0; k < 10; ++k) REQUIRE(source.send(k, 100));
  source.close();
  std::this_thread::sleep_for(700ms);  // past every delay: a timer that still fired would show
  CHECK(source.completions == 0);
  CHECK(sink.received == 0);
}

TEST_CASE("emulated: a disconnection comes after the data held before it", "[emulated][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context receiving(emulated("in=20Mbps,burst=4KiB"));
  netio::Context sending;
  Sink sink(receiving, base, 64);
  auto source = std::make_unique<Source>(sending, sink.local, 64);
  constexpr std::size_t count = 60;
  for (std::uint64_t k = 0; k < count; ++k) REQUIRE(source->send(k, size_of(k)));
  REQUIRE(eventually([&] { return source->completions == count; }));
  source.reset();  // closes: the receiver is told once it has handed up everything held
  REQUIRE(eventually([&] { return sink.disconnects == 1; }));
  check_stream(sink.messages().at(0), count);
  sink.run([&] { CHECK(sink.disconnect_after == std::vector<std::size_t>{count}); });
}
