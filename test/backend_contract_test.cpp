// SPDX-License-Identifier: MIT
// The back-end contract (netio/backend/backend.hpp), checked on every registered back-end through
// the low-level sockets a Context gets from the registry: completions in FIFO order, no
// callback after close(), and a send() that cannot send reports through callbacks instead
// of throwing. Run with NETIO_TEST_WRAP_BACKENDS=1, the same checks go through a decorator.
#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/internal/little_endian.hpp"
#include "support/counting_backend.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::AcceptDecision;
using netio::Buffer;
using netio::BufferPool;
using netio::Endpoint;
using netio::Errc;
using netio::Error;
using netio::test::eventually;
using netio::test::pattern;

namespace {

// One listener, the connection it accepts and one send socket to it, on `context`'s loop.
// Callback counters are atomics read by the test thread; the rest is loop-thread only
// unless noted. The destructor closes every socket on the loop thread.
class Pair {
 public:
  Pair(netio::Context& context, const Endpoint& base, std::size_t max_buffer_size, std::size_t pool_buffers,
       std::size_t receive_credits = 8)
      : context_(context), backend_(context.backend(base)) {
    run([&] {
      listener = backend_.make_listen_socket();
      netio::LowLevelListenSocket::Callbacks callbacks;
      callbacks.on_request = [max_buffer_size, receive_credits](const Endpoint&, std::span<const std::byte>) {
        return AcceptDecision::accept(max_buffer_size, receive_credits);
      };
      callbacks.on_accepted = [this](std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
        accept(std::move(socket));
      };
      listener->listen(base, std::move(callbacks));
      const Endpoint remote = listener->local_endpoint();

      sender = backend_.make_send_socket();
      netio::LowLevelSendSocket::Callbacks send_callbacks;
      send_callbacks.on_connected = [this](const netio::ConnectionInfo&) { connected = true; };
      send_callbacks.on_connect_failed = [this](const Error& error) { record(sender_failure, error); };
      send_callbacks.on_disconnected = [this](const Error& error) {
        ++sender_disconnects;
        record(sender_failure, error);
      };
      send_callbacks.on_send_completed = [this](Buffer* buffer) {
        completed_buffers.push_back(buffer);
        ++completions;
        if (on_completed) on_completed(buffer);
      };
      sender->connect(remote, {}, std::move(send_callbacks));
      pool = std::make_unique<BufferPool>(pool_buffers, 4096, sender->registrar());
    });
  }
  ~Pair() {
    run([this] {
      held.clear();
      if (sender) sender->close();
      if (receiver) receiver->close();
      if (listener) listener->close();
      sender.reset();
      receiver.reset();
      listener.reset();
    });
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;

  void run(const std::function<void()>& task) { context_.loop().run_sync(task); }

  bool wait_connected() {
    return eventually([this] { return (connected && accepted) || failure().has_value(); }) && !failure();
  }
  std::optional<Error> failure() {
    std::lock_guard lock(mutex);
    return sender_failure;
  }

  // A pool buffer of `size` bytes holding pattern(size, seed). Test thread.
  Buffer* filled(std::size_t size, std::uint64_t seed) {
    Buffer* buffer = pool->acquire(10s);
    REQUIRE(buffer != nullptr);
    pool->reserve(buffer, size);
    const auto bytes = pattern(size, seed);
    if (size != 0) std::memcpy(buffer->data, bytes.data(), size);
    buffer->size = size;
    return buffer;
  }

  std::unique_ptr<netio::LowLevelListenSocket> listener;
  std::unique_ptr<netio::LowLevelReceiveSocket> receiver;
  std::unique_ptr<netio::LowLevelSendSocket> sender;
  std::unique_ptr<BufferPool> pool;

  std::atomic<bool> connected{false};
  std::atomic<bool> accepted{false};
  std::atomic<std::size_t> completions{0};
  std::atomic<std::size_t> sender_disconnects{0};
  std::atomic<std::size_t> received{0};
  std::atomic<std::size_t> receiver_disconnects{0};
  std::vector<Buffer*> completed_buffers;               // loop thread, read after it is quiet
  std::vector<std::vector<std::byte>> messages;         // loop thread, read after it is quiet
  std::function<void(Buffer*)> on_completed;            // set before traffic
  std::function<void(netio::ReceivedBuffer&)> on_data;  // set before traffic
  std::vector<netio::ReceivedBuffer> held;              // loop thread: kept while `hold`
  bool hold = false;                                    // loop thread

  // Stops giving received buffers back: the receiver stalls once its credits are lent,
  // and the sender's queue grows behind it.
  void stall_receiver() {
    run([this] { hold = true; });
  }
  // Gives them back: the backlog then flows in batches (several completions per write).
  void resume_receiver() {
    run([this] {
      hold = false;
      held.clear();
    });
  }

  std::mutex mutex;
  std::optional<Error> sender_failure;  // guarded by mutex

 private:
  void accept(std::unique_ptr<netio::LowLevelReceiveSocket> socket) {
    receiver = std::move(socket);
    netio::LowLevelReceiveSocket::Callbacks callbacks;
    callbacks.on_data = [this](netio::ReceivedBuffer buffer) {
      messages.emplace_back(buffer.bytes().begin(), buffer.bytes().end());
      ++received;
      if (on_data) on_data(buffer);
      if (hold) held.push_back(std::move(buffer));
    };
    callbacks.on_disconnected = [this](const Error&) { ++receiver_disconnects; };
    receiver->start(std::move(callbacks));
    accepted = true;
  }
  void record(std::optional<Error>& slot, const Error& error) {
    std::lock_guard lock(mutex);
    if (!slot) slot = error;
  }

  netio::Context& context_;
  netio::Backend& backend_;
};

// The counters that must not move once a socket is closed, kept still for a while.
template <typename Counter>
bool stays_at(const Counter& counter, std::size_t value, std::chrono::milliseconds for_how_long = 300ms) {
  const auto until = std::chrono::steady_clock::now() + for_how_long;
  while (std::chrono::steady_clock::now() < until) {
    if (counter.load() != value) return false;
    std::this_thread::sleep_for(5ms);
  }
  return counter.load() == value;
}

}  // namespace

TEST_CASE("back-end contract: sends complete in the order sent, 0 B to over 1 MiB", "[backend_contract][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  const std::size_t large = (1 << 20) + 4321;
  Pair pair(context, base, large, 200, 4);
  REQUIRE(pair.wait_connected());

  const std::vector<std::size_t> cycle = {0, 1, 100, 8, 4096, large, 65536, 0, 3, 70000, 12};
  constexpr std::size_t count = 200;
  std::vector<Buffer*> sent;
  for (std::size_t i = 0; i < count; ++i) sent.push_back(pair.filled(cycle[i % cycle.size()], i));
  // All sent while the receiver is stalled, so that they queue in the back-end and complete
  // in batches once it reads again.
  pair.stall_receiver();
  pair.run([&] {
    for (Buffer* buffer : sent) pair.sender->send(buffer);
  });
  REQUIRE(eventually([&] { return pair.received > 0; }));
  std::this_thread::sleep_for(100ms);
  CHECK(pair.completions < count);  // the stall held some back
  pair.resume_receiver();
  REQUIRE(eventually([&] { return pair.received == count && pair.completions == count; }, 30s));
  std::vector<Buffer*> completed;
  std::vector<std::vector<std::byte>> messages;
  pair.run([&] {
    completed = pair.completed_buffers;
    messages = pair.messages;
  });
  REQUIRE(completed.size() == count);
  std::size_t out_of_order = 0;
  for (std::size_t i = 0; i < count; ++i) out_of_order += completed[i] != sent[i];
  CHECK(out_of_order == 0);
  REQUIRE(messages.size() == count);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += messages[i] != pattern(cycle[i % cycle.size()], i);
  CHECK(wrong == 0);
  CHECK(pair.sender_disconnects == 0);
  if (netio::test::wrapping_backends()) {
    // The decorator really stood between the test and the back-end.
    const auto& counts = *netio::test::wrapped_backend_counts();
    CHECK(counts.sends >= count);
    CHECK(counts.send_completions >= count);
    CHECK(counts.received >= count);
  }
}

TEST_CASE("back-end contract: no callback runs after close()", "[backend_contract][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  // Enough bytes in a pool's worth of buffers (24 MiB) to fill the kernel's socket buffers.
  constexpr std::size_t size = 64 * 1024;
  Pair pair(context, base, size, 384, 4);
  REQUIRE(pair.wait_connected());
  const auto send_some = [&](std::size_t n, std::uint64_t seed) {
    std::vector<Buffer*> buffers;
    for (std::size_t i = 0; i < n; ++i) buffers.push_back(pair.filled(size, seed + i));
    pair.run([&] {
      for (Buffer* buffer : buffers) pair.sender->send(buffer);
    });
  };

  SECTION("a receive socket closed from inside on_data") {
    pair.on_data = [&](netio::ReceivedBuffer&) {
      if (pair.received == 3) pair.receiver->close();
    };
    send_some(20, 0);
    REQUIRE(eventually([&] { return pair.received >= 3; }));
    send_some(20, 100);  // the peer keeps sending (until it sees the connection go)
    CHECK(stays_at(pair.received, 3));
    CHECK(pair.receiver_disconnects == 0);
  }
  SECTION("a receive socket closed from a later task") {
    send_some(5, 0);
    REQUIRE(eventually([&] { return pair.received == 5; }));
    pair.run([&] { pair.receiver->close(); });
    send_some(20, 100);
    CHECK(stays_at(pair.received, 5));
    CHECK(pair.receiver_disconnects == 0);
  }
  SECTION("a send socket closed from inside on_send_completed, then the peer leaves") {
    // Queued behind a stalled receiver, the buffers complete several per write once it
    // reads again: the close comes in the middle of such a batch.
    pair.stall_receiver();
    send_some(pair.pool->count(), 0);
    REQUIRE(eventually([&] { return pair.received > 0; }));
    std::this_thread::sleep_for(100ms);
    std::size_t close_at = 0;
    pair.run([&] {
      close_at = pair.completions + 2;
      pair.on_completed = [&pair, close_at](Buffer*) {
        if (pair.completions == close_at) pair.sender->close();
      };
    });
    REQUIRE(close_at < pair.pool->count());  // the stall held buffers back
    pair.resume_receiver();
    REQUIRE(eventually([&] { return pair.completions >= close_at; }));
    pair.run([&] { pair.receiver->close(); });  // traffic from the peer: its close
    CHECK(stays_at(pair.completions, close_at));
    CHECK(pair.sender_disconnects == 0);
  }
  SECTION("a send socket closed from a later task, then the peer leaves") {
    send_some(3, 0);
    REQUIRE(eventually([&] { return pair.completions == 3; }));
    std::vector<Buffer*> buffers;
    for (std::size_t i = 0; i < 30; ++i) buffers.push_back(pair.filled(size, 100 + i));
    std::size_t at_close = 0;
    pair.run([&] {
      for (Buffer* buffer : buffers) pair.sender->send(buffer);
      pair.sender->close();  // with buffers queued or in flight
      at_close = pair.completions;
    });
    pair.run([&] { pair.receiver->close(); });
    CHECK(stays_at(pair.completions, at_close));
    CHECK(pair.sender_disconnects == 0);
  }
}

TEST_CASE("back-end contract: a send() that cannot send fails the connection and never throws",
          "[backend_contract][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  Pair pair(context, base, 1000, 4);
  REQUIRE(pair.wait_connected());
  Buffer* fits = pair.filled(1000, 1);
  pair.run([&] { pair.sender->send(fits); });
  REQUIRE(eventually([&] { return pair.completions == 1 && pair.received == 1; }));

  Buffer* too_large = pair.filled(1001, 2);
  pair.run([&] { CHECK_NOTHROW(pair.sender->send(too_large)); });
  REQUIRE(eventually([&] { return pair.failure().has_value(); }));
  const auto error = *pair.failure();
  CHECK(error.code() == Errc::message_too_large);
  CHECK_THAT(error.what(), Catch::Contains("1001") && Catch::Contains("1000"));
  CHECK(pair.sender_disconnects == 1);
  // Closed: the buffer stays the caller's (no completion) and later sends are ignored.
  Buffer* later = pair.filled(10, 3);
  pair.run([&] { CHECK_NOTHROW(pair.sender->send(later)); });
  CHECK(stays_at(pair.completions, 1, 100ms));
  CHECK(pair.received == 1);
  CHECK(pair.sender_disconnects == 1);
}

TEST_CASE("a decorator installed through ContextOptions::wrap_backend sees every socket and call",
          "[backend_contract][registry][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  auto counts = std::make_shared<netio::test::BackendCallCounts>();
  std::vector<std::string> schemes;  // loop thread, then read after
  netio::ContextOptions options;
  options.wrap_backend = [&schemes, counts](std::string_view scheme, std::unique_ptr<netio::Backend> inner,
                                            netio::EventLoop&) {
    schemes.emplace_back(scheme);
    return std::make_unique<netio::test::CountingBackend>(std::move(inner), counts);
  };
  netio::Context context(std::move(options));
  {
    Pair pair(context, base, 4096, 8);
    REQUIRE(pair.wait_connected());
    for (std::uint64_t i = 0; i < 5; ++i) {
      Buffer* buffer = pair.filled(100, i);
      pair.run([&] { pair.sender->send(buffer); });
    }
    REQUIRE(eventually([&] { return pair.received == 5 && pair.completions == 5; }));
  }
  CHECK(schemes == std::vector<std::string>{std::string(base.scheme)});
  CHECK(counts->backends == 1);
  CHECK(counts->listen_sockets == 1);
  CHECK(counts->send_sockets == 1);
  CHECK(counts->receive_sockets == 1);
  CHECK(counts->connects == 1);
  CHECK(counts->sends == 5);
  CHECK(counts->send_completions == 5);
  CHECK(counts->received == 5);
  CHECK(counts->closes >= 3);
}
