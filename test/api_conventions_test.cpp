// SPDX-License-Identifier: MIT
// The API's conventions (docs/design/conventions.md, docs/guide/errors.md), checked where the
// compiler can: one Identity for point-to-point and publish/subscribe, message handlers as
// constructor arguments, push handlers named Handler and visitors Visitor, a Peer that is no
// Endpoint, failure callbacks taking const Error&, plain option structs, noexcept observers,
// one send mode, Message move-only, one code for misuse and one for protocol faults, and the
// waiting rule (wait_* returns false on timeout, a blocking call that must complete throws).
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/message.hpp"
#include "netio/metrics.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "netio/page_pool.hpp"
#include "netio/scheduled_push/timeslice_receiver.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/credits.hpp"
#include "netio/scheduler/input_node.hpp"
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// An enumeration's to_string is a free noexcept function returning std::string_view
// (docs/design/conventions.md), the scheduler's too.
static_assert(std::is_same_v<decltype(netio::to_string(netio::SendMode{})), std::string_view>);
static_assert(std::is_same_v<decltype(netio::to_string(netio::MetricType{})), std::string_view>);
static_assert(
    std::is_same_v<decltype(netio::scheduler::to_string(netio::scheduler::DurationRule{})), std::string_view>);
static_assert(std::is_same_v<decltype(netio::scheduler::to_string(netio::scheduler::ClockRule{})), std::string_view>);
static_assert(std::is_same_v<decltype(netio::scheduler::to_string(netio::scheduler::Mode{})), std::string_view>);
static_assert(noexcept(netio::scheduler::to_string(netio::scheduler::Mode{})));

static_assert(!std::is_copy_constructible_v<netio::Message>);
static_assert(!std::is_copy_assignable_v<netio::Message>);
static_assert(std::is_nothrow_move_constructible_v<netio::Message>);
static_assert(std::is_nothrow_move_assignable_v<netio::Message>);
static_assert(!std::is_copy_constructible_v<netio::pubsub::Publication>);
static_assert(std::is_same_v<decltype(PublishOptions{}.identity), netio::Identity>);
static_assert(std::is_same_v<decltype(SubscribeOptions{}.identity), netio::Identity>);
static_assert(std::is_same_v<decltype(netio::pubsub::SubscriberInfo{}.identity), netio::Identity>);
static_assert(std::is_same_v<decltype(netio::pubsub::SubscriberInfo{}.peer), netio::Peer>);  // a remote is a Peer
static_assert(std::is_same_v<decltype(std::declval<netio::LowLatencySendSocket&>().wait_connected({})), bool>);
static_assert(std::is_same_v<decltype(std::declval<netio::LowLatencySendSocket&>().wait_sent({})), bool>);
static_assert(std::is_same_v<decltype(std::declval<netio::HighThroughputSendSocket&>().wait_connected({})), bool>);
static_assert(std::is_same_v<decltype(std::declval<netio::HighThroughputSendSocket&>().flush_and_wait({})), bool>);
static_assert(std::is_same_v<decltype(std::declval<netio::MultiDestinationSendSocket&>().close_and_wait()), void>);
// close() never waits and reports through its callback, on every send socket alike.
static_assert(std::is_same_v<decltype(std::declval<netio::MultiDestinationSendSocket&>().close({})), void>);
static_assert(std::is_same_v<decltype(std::declval<netio::LowLatencySendSocket&>().close({})), void>);
static_assert(std::is_same_v<decltype(std::declval<netio::HighThroughputSendSocket&>().close({})), void>);

// Remotes: a Peer on the receiving side, and a Peer is not its address.
static_assert(!std::is_convertible_v<const netio::Peer&, const netio::Endpoint&>);
static_assert(
    std::is_invocable_v<netio::LowLatencyReceiveSocket::Handler, std::span<const std::byte>, const netio::Peer&>);

// Push handlers (netio calls them for every message) are Handler and return nothing;
// visitors (recv_each) are Visitor and return whether to go on.
static_assert(std::is_same_v<netio::LowLatencyReceiveSocket::Handler::result_type, void>);
static_assert(std::is_same_v<netio::pubsub::SubscribeSocket::Handler::result_type, void>);
static_assert(std::is_same_v<netio::scheduled_push::TimesliceReceiver::Handler::result_type, void>);
static_assert(std::is_same_v<netio::HighThroughputReceiveSocket::Visitor::result_type, bool>);
static_assert(std::is_same_v<netio::HighThroughputReceiveSocket::PeerVisitor::result_type, bool>);
static_assert(std::is_same_v<netio::pubsub::SubscribeSocket::Visitor::result_type, bool>);

// A callback told of a failure takes const Error&.
static_assert(std::is_same_v<decltype(netio::ConnectionEvents::on_disconnected),
                             std::function<void(const netio::Peer&, const netio::Error&)>>);
static_assert(std::is_same_v<decltype(netio::MultiDestinationSendOptions::on_peer_failed),
                             std::function<void(const netio::Endpoint&, const netio::Error&)>>);

// One send mode for sockets and subscriptions.
static_assert(std::is_same_v<netio::pubsub::Mode, netio::SendMode>);

// Observers answer from any thread without throwing.
static_assert(noexcept(std::declval<const netio::LowLatencySendSocket&>().connected()));
static_assert(noexcept(std::declval<const netio::LowLatencySendSocket&>().stats()));
static_assert(noexcept(std::declval<const netio::LowLatencySendSocket&>().remote()));
static_assert(noexcept(std::declval<const netio::HighThroughputSendSocket&>().connected()));
static_assert(noexcept(std::declval<const netio::HighThroughputSendSocket&>().stats()));
static_assert(noexcept(std::declval<const netio::LowLatencyReceiveSocket&>().stats()));
static_assert(noexcept(std::declval<const netio::HighThroughputReceiveSocket&>().stats()));
static_assert(noexcept(std::declval<const netio::MultiDestinationSendSocket&>().stats()));

// Options are plain aggregates with a default for every member: `{}` is a working socket,
// and designated initialisers name what differs.
template <typename Options>
constexpr bool plain_options =
    std::is_aggregate_v<Options>&& std::is_default_constructible_v<Options>&& std::is_copy_constructible_v<Options>;
static_assert(plain_options<netio::ContextOptions>);
static_assert(plain_options<netio::LowLatencySendOptions>);
static_assert(plain_options<netio::LowLatencyReceiveOptions>);
static_assert(plain_options<netio::HighThroughputSendOptions>);
static_assert(plain_options<netio::HighThroughputReceiveOptions>);
static_assert(plain_options<netio::MultiDestinationSendOptions>);
static_assert(plain_options<netio::AdmissionOptions>);
static_assert(plain_options<netio::ReplyOptions>);
static_assert(plain_options<netio::PagePoolOptions>);
static_assert(plain_options<netio::pubsub::PublishOptions>);
static_assert(plain_options<netio::pubsub::SubscribeOptions>);
static_assert(plain_options<netio::scheduled_push::TimesliceSenderOptions>);
static_assert(plain_options<netio::scheduled_push::TimesliceReceiverOptions>);

TEST_CASE("misuse is Errc::invalid_option, a peer's protocol fault Errc::protocol_error", "[api]") {
  auto code_of = [](auto&& call) {
    try {
      call();
    } catch (const netio::Error& e) {
      return e.code();
    }
    return std::error_code();
  };
  const std::byte reply[1]{};
  CHECK(code_of([&] { (void)netio::Peer().try_reply(reply); }) == netio::Errc::invalid_option);
  CHECK(code_of([&] { netio::Peer().reply(reply); }) == netio::Errc::invalid_option);
  // A compute node giving back a credit it never got broke the protocol.
  netio::scheduler::InputCredits credits(1, 1);
  CHECK(code_of([&] { credits.give_back(0); }) == netio::Errc::protocol_error);
  // Asking for one that does not exist is the caller's mistake.
  CHECK(code_of([&] { (void)credits.try_take(5); }) == netio::Errc::invalid_option);
}

TEST_CASE("recv_reply() on a socket whose replies go to on_reply is misuse", "[api]") {
  netio::Context context;
  netio::LowLatencyReceiveSocket receiver(context, Endpoint::parse("tcp://127.0.0.1:0"),
                                          [](std::span<const std::byte>, const netio::Peer&) {});
  netio::LowLatencySendOptions options;
  options.replies.on_reply = [](std::span<const std::byte>) {};
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint(), options);
  try {
    (void)sender.recv_reply(std::chrono::milliseconds(1));
    FAIL("recv_reply() went through");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
  }
}

TEST_CASE("a moved-from Message is empty and the moved-to one keeps the bytes and the peer", "[api]") {
  netio::Message original(std::vector<std::byte>(10, std::byte{7}));
  netio::Message moved(std::move(original));
  CHECK(moved.size() == 10);
  CHECK(original.size() == 0);  // NOLINT(bugprone-use-after-move): the contract under test
  CHECK_FALSE(original.peer());
  netio::Message assigned;
  assigned = std::move(moved);
  CHECK(assigned.size() == 10);
  CHECK(assigned.bytes()[9] == std::byte{7});
  CHECK(moved.size() == 0);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("wait_connected() returns false on timeout instead of throwing", "[api]") {
  // A listener that never answers the handshake: a raw TCP socket would do; a receive socket
  // on a context whose loop is busy does too.
  netio::Context receiver_context;
  netio::HighThroughputReceiveSocket receiver(receiver_context, Endpoint::parse("tcp://127.0.0.1:0"));
  std::mutex hold;
  std::unique_lock held(hold);
  receiver_context.loop().post([&hold] { std::lock_guard wait_for_test(hold); });  // the loop stalls

  netio::Context context;
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint());
  bool connected = true;
  CHECK_NOTHROW(connected = sender.wait_connected(std::chrono::milliseconds(100)));
  CHECK_FALSE(connected);
  held.unlock();  // the receiver's loop goes on: the connection comes up
  CHECK(sender.wait_connected(10s));
}

TEST_CASE("pub/sub declares an Identity: the publisher's name and endpoint reach the subscriber", "[api][pubsub]") {
  netio::Context context(netio::test::context_options());
  PublishOptions publish_options;
  publish_options.identity.name = "readout-7";
  PublishSocket publisher(context, Endpoint::parse("tcp://127.0.0.1:0"), publish_options);
  SubscribeOptions subscribe_options;
  subscribe_options.identity.name = "storage-3";
  SubscribeSocket subscriber(context, subscribe_options);
  subscriber.subscribe(publisher.local_endpoint(), 5);
  publisher.publish(5, netio::test::pubsub_message(5, 0, 16));
  publisher.flush();
  auto publication = subscriber.recv(10s);
  REQUIRE(publication);
  CHECK(publication->publisher().name() == "readout-7");
  REQUIRE(publication->publisher().identity().endpoint);
  CHECK(*publication->publisher().identity().endpoint == publisher.local_endpoint());
}

TEST_CASE("a low-latency subscription on a socket without a message handler is Errc::invalid_option", "[api][pubsub]") {
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse("tcp://127.0.0.1:0"));
  SubscribeSocket subscriber(context);  // no handler: high-throughput subscriptions only
  try {
    subscriber.subscribe(publisher.local_endpoint(), 1, Mode::low_latency);
    FAIL("a low-latency subscription without a handler was accepted");
  } catch (const netio::Error& e) {
    CHECK(e.code() == netio::Errc::invalid_option);
    CHECK_THAT(e.what(), Catch::Contains("message handler"));
  }
  subscriber.subscribe(publisher.local_endpoint(), 1, Mode::high_throughput);  // still fine

  std::atomic<int> got{0};
  SubscribeSocket with_handler(context, [&](Tag, std::span<const std::byte>, const netio::Peer&) { ++got; });
  with_handler.subscribe(publisher.local_endpoint(), 2, Mode::low_latency);
  publisher.publish(2, netio::test::pubsub_message(2, 0, 16));
  CHECK(eventually([&] { return got == 1; }));
}
