// SPDX-License-Identifier: MIT
// Sockets that outlive their Context (members declared in the wrong order): every call that
// does something throws Errc::closed naming the socket's endpoint, and every destructor
// returns at once; on every back-end. Before this was handled, send() returned without
// error and the send sockets' destructors waited forever on the freed context.
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::Errc;

namespace {

using Clock = std::chrono::steady_clock;

// What the documentation promises for a destructor after the context went: it waits for
// nothing. Generous, so that a loaded CI machine cannot fail it; a hang is far longer.
constexpr auto destructor_bound = 2s;

// Runs `call`, which must throw Errc::closed with `endpoint` in its message.
template <typename Call>
void check_closed(Call call, const std::string& endpoint) {
  try {
    call();
    FAIL("no exception: the call on a socket whose Context is gone returned");
  } catch (const netio::Error& e) {
    CHECK(e.code() == Errc::closed);
    CHECK_THAT(e.what(), Catch::Contains(endpoint));
    CHECK_THAT(e.what(), Catch::Contains("Context"));
  }
}

template <typename Socket>
Clock::duration destroy_timed(std::unique_ptr<Socket>& socket) {
  const auto start = Clock::now();
  socket.reset();
  return Clock::now() - start;
}

}  // namespace

TEST_CASE("sockets that outlive their Context throw closed and are destroyed at once", "[context][lifetime]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  const std::vector<std::byte> message(64, std::byte{7});

  auto context = std::make_unique<netio::Context>(netio::test::context_options());
  auto ll_receiver = std::make_unique<netio::LowLatencyReceiveSocket>(
      *context, base, [](std::span<const std::byte>, const netio::Peer&) {});
  auto ht_receiver = std::make_unique<netio::HighThroughputReceiveSocket>(*context, base);
  const std::string ll_remote = ll_receiver->local_endpoint().to_string();
  const std::string ht_remote = ht_receiver->local_endpoint().to_string();
  const std::string ht_local = ht_remote;
  auto ll_sender = std::make_unique<netio::LowLatencySendSocket>(*context, ll_receiver->local_endpoint());
  auto ht_sender = std::make_unique<netio::HighThroughputSendSocket>(*context, ht_receiver->local_endpoint());
  auto multi = std::make_unique<netio::MultiDestinationSendSocket>(*context);
  auto publisher = std::make_unique<netio::pubsub::PublishSocket>(*context, base);
  const std::string publisher_local = publisher->local_endpoint().to_string();
  auto subscriber = std::make_unique<netio::pubsub::SubscribeSocket>(*context);

  // Everything in use, with connections open, before the context goes.
  ll_sender->send(message);
  ht_sender->send(message);
  ht_sender->flush();
  multi->send(ll_receiver->local_endpoint(), message);
  subscriber->subscribe(publisher->local_endpoint(), 1);
  publisher->publish(1, message);
  REQUIRE(ll_sender->wait_connected(10s));
  REQUIRE(ht_sender->wait_connected(10s));

  context.reset();

  check_closed([&] { ll_sender->send(message); }, ll_remote);
  check_closed([&] { (void)ll_sender->try_send(message); }, ll_remote);
  check_closed([&] { (void)ll_sender->wait_connected(1s); }, ll_remote);
  check_closed([&] { (void)ll_sender->recv_reply(1ms); }, ll_remote);
  check_closed([&] { ll_sender->close(); }, ll_remote);
  check_closed([&] { ht_sender->send(message); }, ht_remote);
  check_closed([&] { ht_sender->flush(); }, ht_remote);
  check_closed([&] { (void)ht_sender->flush_and_wait(1s); }, ht_remote);
  check_closed([&] { (void)ht_receiver->recv(1ms); }, ht_local);
  check_closed([&] { (void)ht_receiver->try_recv(); }, ht_local);
  check_closed([&] { multi->send(ll_receiver->local_endpoint(), message); }, "multi-destination");
  check_closed([&] { multi->flush(); }, "multi-destination");
  check_closed([&] { publisher->publish(1, message); }, publisher_local);
  check_closed([&] { publisher->flush(); }, publisher_local);
  check_closed([&] { subscriber->subscribe(Endpoint::parse(publisher_local), 2); }, "subscribe socket");
  check_closed([&] { (void)subscriber->recv(1ms); }, "subscribe socket");

  // Senders first, then receivers: the order a wrong declaration gives; each on its own.
  CHECK(destroy_timed(ll_sender) < destructor_bound);
  CHECK(destroy_timed(ht_sender) < destructor_bound);
  CHECK(destroy_timed(multi) < destructor_bound);
  CHECK(destroy_timed(subscriber) < destructor_bound);
  CHECK(destroy_timed(publisher) < destructor_bound);
  CHECK(destroy_timed(ht_receiver) < destructor_bound);
  CHECK(destroy_timed(ll_receiver) < destructor_bound);
}

TEST_CASE("a send socket with messages queued outlives its Context and is destroyed at once", "[context][lifetime]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  auto context = std::make_unique<netio::Context>(netio::test::context_options());
  // A receiver that never takes a page: what the sender queues stays unsent.
  auto receiver = std::make_unique<netio::HighThroughputReceiveSocket>(*context, base);
  netio::HighThroughputSendOptions options;
  options.page_count = 2;
  auto sender = std::make_unique<netio::HighThroughputSendSocket>(*context, receiver->local_endpoint(), options);
  const std::vector<std::byte> message(1024, std::byte{1});
  for (int i = 0; i < 64 && sender->try_send(message); ++i) {
  }
  context.reset();
  // Receiver first this time.
  CHECK(destroy_timed(receiver) < destructor_bound);
  CHECK(destroy_timed(sender) < destructor_bound);
}
