// SPDX-License-Identifier: MIT
// Low-latency sockets over real loopback connections, on every back-end.
#include "netio/low_latency_socket.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/high_throughput_socket.hpp"
#include "support/loopback_port.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::test::eventually;
using netio::test::pattern;

namespace {

// Collects what a LowLatencyReceiveSocket delivers; thread-safe.
struct Inbox {
  std::mutex mutex;
  std::vector<std::vector<std::byte>> messages;
  std::atomic<std::size_t> count{0};

  netio::LowLatencyReceiveSocket::Handler handler() {
    return [this](std::span<const std::byte> m, const netio::Peer&) {
      std::lock_guard lock(mutex);
      messages.emplace_back(m.begin(), m.end());
      ++count;
    };
  }
};

}  // namespace

TEST_CASE("low-latency messages from 0 B to 16 MiB arrive intact", "[low_latency][integration][volume]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  Inbox inbox;
  netio::LowLatencyReceiveOptions receive_options;
  receive_options.max_message_size = 16 << 20;
  netio::LowLatencyReceiveSocket receiver(context, base, inbox.handler(), receive_options);
  REQUIRE(receiver.local_endpoint().port != 0);
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  REQUIRE(sender.wait_connected(5s));

  std::vector<std::size_t> sizes = {0,    1,     7,     8,     9,       1000,           4095,
                                    4096, 65535, 65536, 65537, 1 << 20, (16 << 20) - 1, 16 << 20};
  for (std::size_t i = 0; i < sizes.size(); ++i) sender.send(pattern(sizes[i], i));
  REQUIRE(eventually([&] { return inbox.count == sizes.size(); }, 30s));
  std::lock_guard lock(inbox.mutex);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("message " << i << " of " << sizes[i] << " bytes");
    CHECK(inbox.messages[i] == pattern(sizes[i], i));
  }
  CHECK(sender.stats().messages == sizes.size());
  CHECK(receiver.stats().messages == sizes.size());
}

TEST_CASE("10,000 low-latency messages arrive in order", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  // Busy polling changes how the loop learns of posted work and, on libfabric, how the
  // completion queues are read (no wait fds, a poller every round): credits must still flow.
  const bool busy_poll = GENERATE(false, true);
  INFO("busy polling: " << busy_poll);
  netio::Context context(
      netio::test::context_options({.busy_poll = busy_poll, .cpu = std::nullopt, .wrap_backend = {}, .emulation = {}}));
  std::vector<std::uint64_t> seen;  // loop thread only until the count is reached
  std::atomic<std::size_t> count{0};
  netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte> m, const netio::Peer&) {
    std::uint64_t v = 0;
    std::memcpy(&v, m.data(), sizeof v);
    seen.push_back(v);
    ++count;
  });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  constexpr std::uint64_t n = 10'000;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::array<std::byte, 32> m{};
    std::memcpy(m.data(), &i, sizeof i);
    sender.send(m);  // sent before the connection is up too: queued, then delivered
  }
  REQUIRE(eventually([&] { return count == n; }, 30s));
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(seen[i] == i);
}

TEST_CASE("a refused connection is reported with the endpoint", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  const netio::test::LoopbackPort refusing(netio::test::LoopbackPort::Kind::refusing);  // nobody listens there
  const Endpoint closed_port = refusing.endpoint(base);
  netio::LowLatencySendOptions options;
  options.connect_timeout = netio::connect_once;  // one attempt: its refusal (retrying: connect_retry_test.cpp)
  netio::LowLatencySendSocket sender(context, closed_port, options);
  try {
    if (!sender.wait_connected(10s)) FAIL("timed out");
    FAIL("connected to a closed port");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::connection_refused);
    CHECK_THAT(e.what(), Catch::Contains(std::to_string(closed_port.port)));
  }
  CHECK_THROWS_AS(sender.send(pattern(8, 1)), netio::Error);
}

TEST_CASE("a receiver that disappears mid-stream is reported to the sender", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  Inbox inbox;
  auto receiver = std::make_unique<netio::LowLatencyReceiveSocket>(context, base, inbox.handler());
  netio::LowLatencySendSocket sender(context, receiver->local_endpoint());
  REQUIRE(sender.wait_connected(5s));
  for (int i = 0; i < 100; ++i) sender.send(pattern(1000, i));
  REQUIRE(eventually([&] { return inbox.count == 100; }));
  receiver.reset();
  // The sender notices on its next sends (or at once, when the close arrives).
  bool reported = false;
  for (int i = 0; i < 2000 && !reported; ++i) {
    try {
      sender.send(pattern(1000, i));
      std::this_thread::sleep_for(1ms);
    } catch (const netio::Error& e) {
      reported = true;
      CHECK(e.code() == netio::Errc::disconnected);
      CHECK_THAT(e.what(), Catch::Contains(sender.remote().to_string()));
    }
  }
  CHECK(reported);
  CHECK_FALSE(sender.connected());
}

TEST_CASE("a sender that disappears is counted by the receiver, which keeps serving others",
          "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  Inbox inbox;
  netio::LowLatencyReceiveSocket receiver(context, base, inbox.handler());
  netio::LowLatencySendSocket stays(context, receiver.local_endpoint());
  {
    netio::LowLatencySendSocket leaves(context, receiver.local_endpoint());
    REQUIRE(leaves.wait_connected(5s));
    leaves.send(pattern(10, 1));
    REQUIRE(eventually([&] { return inbox.count == 1; }));
  }
  REQUIRE(eventually([&] { return receiver.stats().disconnects == 1; }));
  stays.send(pattern(10, 2));
  REQUIRE(eventually([&] { return inbox.count == 2; }));
}

TEST_CASE("200 concurrent connections to one listener", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const std::size_t connections = base.scheme == "fabric" ? 100 : 200;
  netio::Context context(netio::test::context_options());
  std::mutex mutex;
  std::map<std::uint64_t, int> per_sender;
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = 4096;
  options.receive_credits = 2;
  netio::LowLatencyReceiveSocket receiver(
      context, base,
      [&](std::span<const std::byte> m, const netio::Peer&) {
        std::uint64_t id = 0;
        std::memcpy(&id, m.data(), sizeof id);
        std::lock_guard lock(mutex);
        ++per_sender[id];
      },
      options);
  std::vector<std::unique_ptr<netio::LowLatencySendSocket>> senders;
  netio::LowLatencySendOptions send_options;
  send_options.buffer_count = 4;
  send_options.buffer_size = 4096;
  for (std::size_t i = 0; i < connections; ++i) {
    senders.push_back(std::make_unique<netio::LowLatencySendSocket>(context, receiver.local_endpoint(), send_options));
  }
  for (auto& s : senders) REQUIRE(s->wait_connected(20s));
  CHECK(receiver.stats().connections == connections);
  for (std::uint64_t i = 0; i < connections; ++i) {
    for (int k = 0; k < 3; ++k) senders[i]->send(std::as_bytes(std::span(&i, 1)));
  }
  REQUIRE(eventually(
      [&] {
        std::lock_guard lock(mutex);
        return per_sender.size() == connections;
      },
      30s));
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    for (auto& [id, n] : per_sender)
      if (n != 3) return false;
    return true;
  }));
}

TEST_CASE("send() from 4 threads: every message arrives intact, in order per thread", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  constexpr int threads = 4;
  constexpr std::uint64_t per_thread = 5000;
  std::array<std::uint64_t, threads> next{};  // loop thread only
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> broken{0};
  netio::LowLatencyReceiveSocket receiver(context, base, [&](std::span<const std::byte> m, const netio::Peer&) {
    std::uint64_t header[2];
    std::memcpy(header, m.data(), sizeof header);
    const auto [thread, seq] = std::pair(header[0], header[1]);
    if (thread >= threads || seq != next[thread]++ || m.size() != 100 + seq % 200 ||
        !std::equal(m.begin() + 16, m.end(), pattern(m.size(), seq * threads + thread).begin() + 16)) {
      ++broken;
    }
    ++received;
  });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  REQUIRE(sender.wait_connected(5s));
  std::vector<std::thread> workers;
  for (std::uint64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::uint64_t seq = 0; seq < per_thread; ++seq) {
        auto m = pattern(100 + seq % 200, seq * threads + t);
        std::memcpy(m.data(), &t, 8);
        std::memcpy(m.data() + 8, &seq, 8);
        sender.send(m);
      }
    });
  }
  for (auto& w : workers) w.join();
  REQUIRE(eventually([&] { return received == threads * per_thread; }, 30s));
  CHECK(broken == 0);
}

TEST_CASE("a message larger than the receiver accepts is refused at the sender", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  Inbox inbox;
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = 1000;
  netio::LowLatencyReceiveSocket receiver(context, base, inbox.handler(), options);
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  REQUIRE(sender.wait_connected(5s));
  try {
    sender.send(pattern(1001, 1));
    FAIL("sent an oversized message");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::message_too_large);
    CHECK_THAT(e.what(), Catch::Contains("1001") && Catch::Contains("1000"));
  }
  sender.send(pattern(1000, 2));  // the connection is unharmed
  REQUIRE(eventually([&] { return inbox.count == 1; }));
}

TEST_CASE("a mismatched peer is refused with a clear error", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  netio::HighThroughputReceiveSocket ht_receiver(context, base);
  netio::LowLatencySendSocket sender(context, ht_receiver.local_endpoint());
  try {
    if (!sender.wait_connected(5s)) FAIL("timed out");
    FAIL("a low-latency sender connected to a high-throughput receiver");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::handshake_rejected);
    CHECK_THAT(e.what(), Catch::Contains("low-latency send socket, but this is a high-throughput receive socket"));
  }
}

TEST_CASE("junk on a listening port is dropped without disturbing real peers", "[low_latency][integration][posix]") {
  netio::Context context(netio::test::context_options());
  Inbox inbox;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("tcp://127.0.0.1:0"), inbox.handler());
  const int junk = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(receiver.local_endpoint().port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(junk, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  const char request[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";
  REQUIRE(::send(junk, request, sizeof request - 1, MSG_NOSIGNAL) > 0);
  char byte;
  CHECK(::recv(junk, &byte, 1, 0) <= 0);  // the listener hung up on it (FIN or RST)
  ::close(junk);

  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  sender.send(pattern(64, 7));
  REQUIRE(eventually([&] { return inbox.count == 1; }));
}

TEST_CASE("receive sockets report senders connecting and leaving", "[low_latency][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  std::mutex mutex;
  std::vector<std::string> events;
  netio::LowLatencyReceiveOptions options;
  options.events.on_connected = [&](const netio::Peer& peer) {
    std::lock_guard lock(mutex);
    events.push_back("connected " + peer.address().host);
  };
  options.events.on_disconnected = [&](const netio::Peer& peer, const netio::Error& why) {
    std::lock_guard lock(mutex);
    events.push_back("disconnected " + peer.address().host +
                     (why.code() == netio::Errc::disconnected ? " cleanly" : " badly"));
  };
  Inbox inbox;
  netio::LowLatencyReceiveSocket receiver(context, base, inbox.handler(), options);
  {
    netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
    REQUIRE(sender.wait_connected(5s));
    sender.send(pattern(10, 1));
    REQUIRE(sender.wait_sent(5s));
    REQUIRE(eventually([&] { return inbox.count == 1; }));
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(mutex);
    return events.size() == 2;
  }));
  std::lock_guard lock(mutex);
  const auto host = netio::test::own_peer_host(base);
  CHECK(events[0] == "connected " + host);
  CHECK(events[1] == "disconnected " + host + " cleanly");
}

TEST_CASE("send() on the event-loop thread never waits for buffers that only that thread frees",
          "[low_latency][integration]") {
  netio::Context context(netio::test::context_options());
  // A plain TCP listener that never answers the handshake: the connection never comes up,
  // so no buffer ever completes and the third send finds none free.
  const netio::test::LoopbackPort silent(netio::test::LoopbackPort::Kind::silent);
  netio::LowLatencySendOptions options;
  options.buffer_count = 2;
  options.send_timeout = 1s;  // what the destructor waits for the two queued messages
  netio::LowLatencySendSocket sender(context, silent.endpoint(Endpoint::parse("tcp://127.0.0.1:0")), options);
  int sent = 0;
  bool refused = false;
  context.loop().run_sync([&] {
    try {
      for (; sent < 3; ++sent) sender.send(pattern(8, sent));
    } catch (const netio::Error& e) {
      refused = e.code() == netio::Errc::would_block;
      CHECK_THAT(e.what(), Catch::Contains("use try_send() on the event-loop thread"));
    }
  });
  CHECK(sent == 2);
  CHECK(refused);
}

TEST_CASE("a context refuses to pin its thread to a CPU that does not exist", "[context]") {
  CHECK_THROWS_AS(
      netio::Context(netio::ContextOptions{.busy_poll = false, .cpu = 100000, .wrap_backend = {}, .emulation = {}}),
      netio::Error);
  netio::Context pinned(netio::ContextOptions{.busy_poll = false, .cpu = 0, .wrap_backend = {}, .emulation = {}});
  int ran = 0;
  pinned.loop().run_sync([&] { ran = sched_getcpu() == 0 ? 1 : 2; });
  CHECK(ran == 1);
}

namespace {

// Bytes the kernel still holds for the established TCP connections whose local port is
// `port` (the rx_queue column of /proc/net/tcp).
std::size_t kernel_receive_queue(std::uint16_t port) {
  std::FILE* file = std::fopen("/proc/net/tcp", "r");
  if (file == nullptr) return 0;
  std::size_t total = 0;
  char line[512];
  std::fgets(line, sizeof line, file);  // the header
  while (std::fgets(line, sizeof line, file) != nullptr) {
    unsigned local_address = 0, local_port = 0, remote_address = 0, remote_port = 0, state = 0;
    unsigned long tx_queue = 0, rx_queue = 0;
    if (std::sscanf(line, " %*d: %x:%x %x:%x %x %lx:%lx", &local_address, &local_port, &remote_address, &remote_port,
                    &state, &tx_queue, &rx_queue) == 7 &&
        local_port == port && state == 1 /* TCP_ESTABLISHED */) {
      total += rx_queue;
    }
  }
  std::fclose(file);
  return total;
}

}  // namespace

TEST_CASE("the POSIX receiver delivers small messages before it takes them from the kernel",
          "[low_latency][integration]") {
  // Linux acknowledges a small segment inside the recv() that drains it; on a one-way
  // connection that ACK would come before the delivery. The receive socket peeks, delivers,
  // then drains: during the callback the message is still in the kernel's queue.
  netio::Context context(netio::test::context_options());
  std::atomic<std::size_t> queued_during_delivery{0};
  std::atomic<std::size_t> delivered{0};
  std::atomic<std::uint16_t> port{0};
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("tcp://127.0.0.1:0"),
                                          [&](std::span<const std::byte>, const netio::Peer&) {
                                            queued_during_delivery = kernel_receive_queue(port);
                                            ++delivered;
                                          });
  port = receiver.local_endpoint().port;
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  REQUIRE(sender.wait_connected(5s));
  sender.send(pattern(8, 1));
  REQUIRE(eventually([&] { return delivered == 1; }, 5s));
  CHECK(queued_during_delivery >= 8);
  CHECK(eventually([&] { return kernel_receive_queue(port) == 0; }, 5s));  // drained after the callback
}
