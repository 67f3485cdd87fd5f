// SPDX-License-Identifier: MIT
// A handful of idle peers cannot lock legitimate senders out: connections are charged what
// they hold (64 KiB until their buffers fill, pages as they fill: TCP allocates its buffers
// as bytes arrive, libfabric's posted buffers are backed as messages write them), and when a
// newcomer needs room (the memory budget, max_connections) connections that hold budget and
// have sent no data are evicted first, introduced or not. On both back-ends.
#include "introduction.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "receive_connections.hpp"
#include "support/admission_peers.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace netio::test;
constexpr std::size_t KiB = 1024;

// `count` idle peers: every other one sends its introduction and then nothing, the others
// stop after their hello. Each has connected (and may be evicted by a later one).
std::vector<std::unique_ptr<HelloOnlyPeer>> idle_peers(netio::Context& context, const netio::Endpoint& receiver,
                                                       std::size_t count) {
  std::vector<std::unique_ptr<HelloOnlyPeer>> peers;
  for (std::size_t i = 0; i < count; ++i) {
    auto& peer = peers.emplace_back(std::make_unique<HelloOnlyPeer>(context, receiver));
    REQUIRE(eventually([&] { return peer->connected() || peer->failed(); }));
    REQUIRE(peer->connected());
    if (i % 2 == 1) peer->send(netio::detail::encode_introduction({"idle-" + std::to_string(i), std::nullopt}));
  }
  return peers;
}

}  // namespace

TEST_CASE("the admission limit's worth of idle peers does not lock a legitimate sender out",
          "[budget][admission][idle]") {
  const auto base = GENERATE(loopback_endpoints());
  netio::Context context;
  StreamCheck check;
  std::atomic<int> connected{0};
  netio::LowLatencyReceiveOptions options;
  options.max_message_size = 64 * KiB;
  options.receive_credits = 4;
  options.admission.max_connections = 8;
  options.memory_budget = 8 * netio::detail::idle_connection_charge;  // 8 idle TCP peers fill it
  options.events.on_connected = [&](const netio::Peer&) { ++connected; };
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse(base), check.handler(), options);
  const auto& budget = receiver.memory_budget();

  const auto idle = idle_peers(context, receiver.local_endpoint(), 8);
  // Each costs 64 KiB at most, introduced or not (not its 4 receive buffers of 64 KiB): all
  // 8 fit, none was evicted.
  REQUIRE(eventually([&] { return connected.load() == 4; }));
  CHECK(budget.used() <= 8 * netio::detail::idle_connection_charge);
  for (const auto& peer : idle) CHECK_FALSE(peer->disconnected());

  // A legitimate sender connects and streams: silent peers make room for it.
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), named("legitimate"));
  REQUIRE(sender.wait_connected(10s));
  send_stream(sender, 0, 500);
  REQUIRE(eventually([&] { return check.received("legitimate") == 500; }));
  CHECK(check.corrupt() == 0);
  CHECK(budget.peak() <= budget.limit());
  CHECK(std::any_of(idle.begin(), idle.end(), [](const auto& peer) { return peer->disconnected(); }));
  // A second one too: the sender that is streaming is never the one evicted.
  netio::LowLatencySendSocket second(context, receiver.local_endpoint(), named("second"));
  REQUIRE(second.wait_connected(10s));
  send_stream(second, 0, 100);
  send_stream(sender, 500, 100);
  REQUIRE(eventually([&] { return check.received("second") == 100 && check.received("legitimate") == 600; }));
  CHECK(check.corrupt() == 0);
  CHECK(budget.peak() <= budget.limit());
}

TEST_CASE("an idle connection costs 64 KiB of the budget, pages are charged as they fill", "[budget][idle]") {
  const auto base = GENERATE(loopback_endpoints());
  netio::Context context;
  netio::HighThroughputReceiveOptions options;
  options.page_credits = 8;
  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse(base), options);
  const auto& budget = receiver.memory_budget();
  netio::HighThroughputSendOptions send_options;
  send_options.page_size = 256 * KiB;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), send_options);
  REQUIRE(sender.wait_connected(10s));
  // Connected and introduced, nothing sent: 64 KiB, not 8 pages and a reassembly buffer.
  REQUIRE(eventually([&] { return receiver.stats().connections == 1; }));
  CHECK(budget.used() <= netio::detail::idle_connection_charge);

  sender.send(pattern(200 * KiB, 1));
  REQUIRE(sender.flush_and_wait(10s));
  auto message = receiver.recv(10s);
  REQUIRE(message);
  CHECK(message->size() == 200 * KiB);
  // The page that came is counted (the pages its bytes filled; over shm://, read in place
  // from the sender's send area, what of it the receiver mapped in), the 7 others are not.
  CHECK(budget.used() > netio::detail::idle_connection_charge);
  CHECK(budget.used() < 3 * 256 * KiB);
}
