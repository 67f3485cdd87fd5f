// SPDX-License-Identifier: MIT
// Replies on the emulated network, over the real back-ends (tcp and fabric): a reply is a
// buffer its node sends, so it waits its connection's draws like any other. A round trip
// under delay=constant:D on both sides takes at least 2D (a lower bound from the configured
// delay, a correctness property: no timing beyond it is asserted), replies keep their order
// under random delays and complete in the order sent, and replies still waiting when the
// connection closes or fails are dropped with no callback after it.
#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/error.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using netio::AcceptDecision;
using netio::Buffer;
using netio::BufferPool;
using netio::Endpoint;
using netio::test::eventually;

namespace {

using Clock = std::chrono::steady_clock;

netio::ContextOptions emulated(const std::string& spec) {
  netio::ContextOptions options;
  options.emulation = netio::parse_emulation_spec(spec);
  return options;
}

// 16 bytes: a message's number and a reply's index.
void write_numbers(Buffer* buffer, std::uint64_t first, std::uint64_t second) {
  std::memcpy(buffer->data, &first, 8);
  std::memcpy(buffer->data + 8, &second, 8);
  buffer->size = 16;
}
std::pair<std::uint64_t, std::uint64_t> read_numbers(std::span<const std::byte> bytes) {
  if (bytes.size() < 16) return {~std::uint64_t{0}, ~std::uint64_t{0}};
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  std::memcpy(&first, bytes.data(), 8);
  std::memcpy(&second, bytes.data() + 8, 8);
  return {first, second};
}

// A listener whose one connection answers each message with `replies_per_message` replies
// (the message's number, the reply's index) from a pool of its own, on the same connection.
// Counts what the receive socket reports after it was closed or failed: none may come.
class Replier {
 public:
  Replier(netio::Context& context, const Endpoint& base, std::size_t replies_per_message, std::size_t pool_buffers)
      : context_(context), replies_per_message_(replies_per_message) {
    run([&] {
      listener_ = context_.backend(base).make_listen_socket();
      netio::LowLevelListenSocket::Callbacks callbacks;
      callbacks.on_request = [](const Endpoint&, std::span<const std::byte>) {
        return AcceptDecision::accept(1 << 16, 8);
      };
      callbacks.on_accepted = [this, pool_buffers](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
        if (socket_) return;  // one connection per test
        socket_ = std::move(socket);
        pool_ = std::make_unique<BufferPool>(pool_buffers, 64, socket_->reply_registrar());
        netio::LowLevelReceiveSocket::Callbacks cb;
        cb.on_data = [this](netio::ReceivedBuffer buffer) { on_data(buffer.bytes()); };
        cb.on_reply_completed = [this](Buffer* buffer) { on_reply_completed(buffer); };
        cb.on_disconnected = [this](const netio::Error&) {
          if (ended_) ++late_callbacks;
          ended_ = true;
          // As the layer above does: the connection is gone, so are its reply buffers.
          pool_.reset();
          ++disconnects;
        };
        socket_->start(std::move(cb));
      };
      listener_->listen(base, std::move(callbacks));
      local = listener_->local_endpoint();
    });
  }
  ~Replier() { close(); }

  // Closes (and destroys) the connection's socket, then frees its reply buffers.
  void close() {
    run([this] {
      if (socket_) socket_->close();
      ended_ = true;
      socket_.reset();
      pool_.reset();
      if (listener_) listener_->close();
      listener_.reset();
    });
  }
  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }

  Endpoint local;
  std::atomic<std::size_t> received{0};
  std::atomic<std::size_t> replies_sent{0};
  std::atomic<std::size_t> replies_completed{0};
  std::atomic<std::size_t> disconnects{0};
  std::atomic<std::size_t> late_callbacks{0};  // after close() or on_disconnected
  std::atomic<std::size_t> pool_dry{0};        // a reply that found no buffer
  std::atomic<bool> completions_in_order{true};

 private:
  void on_data(std::span<const std::byte> bytes) {
    if (ended_) {
      ++late_callbacks;
      return;
    }
    ++received;
    const std::uint64_t seq = read_numbers(bytes).first;
    for (std::size_t i = 0; i < replies_per_message_; ++i) {
      Buffer* reply = pool_->try_acquire();
      if (reply == nullptr) {
        ++pool_dry;
        return;
      }
      write_numbers(reply, seq, i);
      sent_.push_back(reply);
      ++replies_sent;
      socket_->send_reply(reply);  // may complete at once
    }
  }
  void on_reply_completed(Buffer* buffer) {
    if (ended_ || !pool_) {
      ++late_callbacks;
      return;
    }
    if (completed_ >= sent_.size() || sent_[completed_] != buffer) completions_in_order = false;
    ++completed_;
    ++replies_completed;
    pool_->release(buffer);
  }

  netio::Context& context_;
  std::size_t replies_per_message_;
  std::unique_ptr<netio::LowLevelListenSocket> listener_;  // loop thread, as the rest
  std::unique_ptr<netio::LowLevelReceiveSocket> socket_;
  std::unique_ptr<BufferPool> pool_;
  std::vector<Buffer*> sent_;  // every reply sent, in order
  std::size_t completed_ = 0;
  bool ended_ = false;
};

// A send socket that takes replies, recording each with the time it arrived.
class Requester {
 public:
  Requester(netio::Context& context, const Endpoint& remote, std::size_t pool_buffers = 32) : context_(context) {
    run([&] {
      socket_ = context_.backend(remote).make_send_socket();
      socket_->accept_replies(netio::ReplyWindow{64, 8});
      netio::LowLevelSendSocket::Callbacks callbacks;
      callbacks.on_connected = [this](const netio::ConnectionInfo&) { connected = true; };
      callbacks.on_connect_failed = [this](const netio::Error&) { failed = true; };
      callbacks.on_disconnected = [this](const netio::Error&) { failed = true; };
      callbacks.on_send_completed = [this](Buffer* buffer) { pool_->release(buffer); };
      callbacks.on_reply = [this](netio::ReceivedBuffer reply) {
        const auto now = Clock::now();
        std::lock_guard lock(mutex_);
        replies_.push_back(read_numbers(reply.bytes()));
        arrivals_.push_back(now);
        ++reply_count;
      };
      socket_->connect(remote, {}, std::move(callbacks));
      pool_ = std::make_unique<BufferPool>(pool_buffers, 64, socket_->registrar());
    });
    REQUIRE(eventually([this] { return connected || failed; }));
    REQUIRE(connected);
  }
  ~Requester() { close(); }
  void close() {
    run([this] {
      if (socket_) socket_->close();
      socket_.reset();
    });
  }
  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }

  // Sends message `seq` (waiting for a free buffer); returns when it was handed to the
  // socket, on the loop thread. Any thread (no Catch assertion in here).
  [[nodiscard]] std::optional<Clock::time_point> send(std::uint64_t seq) {
    Buffer* buffer = pool_->acquire(30s);
    if (buffer == nullptr) return std::nullopt;
    write_numbers(buffer, seq, 0);
    Clock::time_point sent;
    run([&] {
      sent = Clock::now();
      socket_->send(buffer);
    });
    return sent;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> replies() {
    std::lock_guard lock(mutex_);
    return replies_;
  }
  Clock::time_point arrival(std::size_t index) {
    std::lock_guard lock(mutex_);
    return arrivals_.at(index);
  }

  std::atomic<bool> connected{false};
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> reply_count{0};

 private:
  netio::Context& context_;
  std::unique_ptr<netio::LowLevelSendSocket> socket_;  // loop thread
  std::unique_ptr<BufferPool> pool_;
  std::mutex mutex_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> replies_;  // guarded by mutex_
  std::vector<Clock::time_point> arrivals_;                       // guarded by mutex_
};

}  // namespace

TEST_CASE("emulated: a round trip under delay=constant:D on both sides takes at least 2D",
          "[emulated][emulated_replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  constexpr auto delay = 20ms;  // far above what loopback and the loops add: 2D is not reached by D + that
  netio::Context replying(emulated("delay=constant:20ms"));
  netio::Context requesting(emulated("delay=constant:20ms"));
  Replier replier(replying, base, 1, 8);
  Requester requester(requesting, replier.local);
  constexpr std::size_t round_trips = 5;
  for (std::uint64_t k = 0; k < round_trips; ++k) {
    const auto sent = requester.send(k);
    REQUIRE(sent);
    REQUIRE(eventually([&] { return requester.reply_count == k + 1; }));
    const auto round_trip = std::chrono::duration_cast<std::chrono::microseconds>(requester.arrival(k) - *sent);
    INFO("round trip " << k << ": " << round_trip.count() << " us (one way: " << delay.count() << " ms)");
    CHECK(round_trip.count() >= std::chrono::microseconds(2 * delay).count());
  }
  CHECK(requester.replies() ==
        std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}});
  CHECK(replying.emulation()->counters().buffers_delayed == round_trips);  // every reply waited its D
  CHECK(replier.late_callbacks == 0);
}

TEST_CASE("emulated: replies keep their order under random delays and complete in the order sent",
          "[emulated][emulated_replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // A wide spread: independent draws would overtake the reply before them most of the time.
  netio::Context replying(emulated("delay=lognormal:mean=200us,sigma=1.5;seed=3"));
  netio::Context requesting(emulated("delay=lognormal:mean=50us,sigma=1;seed=4"));
  constexpr std::size_t count = 300;
  constexpr std::size_t per_message = 3;
  Replier replier(replying, base, per_message, count * per_message);
  Requester requester(requesting, replier.local);
  for (std::uint64_t k = 0; k < count; ++k) REQUIRE(requester.send(k));
  REQUIRE(eventually([&] { return requester.reply_count == count * per_message; }, 60s));
  REQUIRE(eventually([&] { return replier.replies_completed == count * per_message; }));
  const auto replies = requester.replies();
  REQUIRE(replies.size() == count * per_message);
  for (std::size_t n = 0; n < replies.size(); ++n) {
    INFO("reply " << n);
    REQUIRE(replies[n] == std::make_pair<std::uint64_t, std::uint64_t>(n / per_message, n % per_message));
  }
  CHECK(replier.completions_in_order);
  CHECK(replier.pool_dry == 0);
  CHECK(replier.late_callbacks == 0);
  CHECK(replying.emulation()->counters().buffers_delayed > count);  // the replies waited their draws
}

TEST_CASE("emulated: replies still delayed when the connection ends are dropped, with no callback after it",
          "[emulated][emulated_replies][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // The replies wait 300 ms; the connection ends well before, and the test waits past it: a
  // timer that still fired would show (a callback counted late, or, under ASan, a reply
  // buffer used after its pool was freed).
  netio::Context replying(emulated("delay=constant:300ms"));
  netio::Context requesting;
  constexpr std::size_t count = 5;
  constexpr std::size_t per_message = 3;
  Replier replier(replying, base, per_message, count * per_message);
  auto requester = std::make_unique<Requester>(requesting, replier.local);
  for (std::uint64_t k = 0; k < count; ++k) REQUIRE(requester->send(k));
  REQUIRE(eventually([&] { return replier.replies_sent == count * per_message; }));

  SECTION("the replying side closes its socket") {
    replier.close();  // closes, destroys the socket and frees the reply buffers at once
  }
  SECTION("the requesting side goes away: the replying socket fails") {
    requester->close();
    REQUIRE(eventually([&] { return replier.disconnects == 1; }));
  }
  std::this_thread::sleep_for(600ms);  // past every delay
  CHECK(replier.replies_completed == 0);
  CHECK(replier.late_callbacks == 0);
  CHECK(requester->reply_count == 0);
  CHECK(replying.emulation()->counters().bytes_sent == 0);  // none reached the real back-end
  replier.close();
  requester.reset();
}
