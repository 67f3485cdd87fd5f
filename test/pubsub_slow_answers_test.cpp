// SPDX-License-Identifier: MIT
// A subscriber whose loop is too busy to take its answers (they fill the publisher's reply
// window: on libfabric a reply needs a receive the subscriber has posted) loses none of
// them: the publisher holds what it has no room for and sends it, in order, as room comes.
// One that asks and never reads makes it hold a bounded number, logged once.
#include "control_message.hpp"
#include "support/matching_log_lines.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "netio/low_latency_socket.hpp"
#include "netio/pubsub/publish_socket.hpp"

#include <catch2/catch.hpp>

#include <thread>
#include <variant>

using netio::Endpoint;
using namespace std::chrono_literals;
namespace pubsub = netio::pubsub;

namespace {

void send_unsubscribe_requests(netio::LowLatencySendSocket& control, std::uint64_t count) {
  for (std::uint64_t id = 1; id <= count; ++id) {
    pubsub::detail::SubscriptionRequest request;
    request.subscribe = false;  // answered at once, and needs no data connection
    request.request_id = id;
    request.tags = {id};
    control.send(pubsub::detail::encode(request));
  }
}

}  // namespace

TEST_CASE("pub/sub: answers a subscriber is slow to take wait at the publisher, none lost, in order",
          "[pubsub][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  pubsub::PublishSocket publisher(context, base);

  // The subscriber's control connection, by hand: its answers queue for recv_reply(), two
  // at most before it stops taking them.
  netio::LowLatencySendOptions options;
  options.replies.credits = 2;
  netio::LowLatencySendSocket control(context, publisher.local_endpoint(), options);
  constexpr std::uint64_t requests = 64;  // four reply windows (16 each)
  send_unsubscribe_requests(control, requests);
  REQUIRE(control.wait_sent(20s));
  std::this_thread::sleep_for(300ms);  // the publisher answers all while none is taken

  for (std::uint64_t id = 1; id <= requests; ++id) {
    const auto reply = control.recv_reply(20s);
    INFO("answer " << id);
    REQUIRE(reply);
    const auto answer = std::get<pubsub::detail::SubscriptionAnswer>(pubsub::detail::decode_reply(reply->bytes()));
    CHECK(answer.accepted);
    CHECK(answer.request_id == id);
  }
}

TEST_CASE("pub/sub: a subscriber that asks and never reads its answers makes the publisher hold 1024, logged once",
          "[pubsub][integration]") {
  // libfabric only: over TCP the kernel's socket buffers take 1300 small answers, and the
  // reply window never fills.
  if (!netio::test::fabric_built()) return;
  const auto base = Endpoint::parse("fabric://127.0.0.1:0?provider=tcp");
  netio::test::MatchingLogLines overflow("is not taking its answers");
  netio::Context context(netio::test::context_options());
  pubsub::PublishSocket publisher(context, base);
  netio::LowLatencySendOptions options;
  options.replies.credits = 2;
  netio::LowLatencySendSocket control(context, publisher.local_endpoint(), options);
  constexpr std::uint64_t requests = 1300;
  send_unsubscribe_requests(control, requests);
  REQUIRE(control.wait_sent(20s));
  REQUIRE(netio::test::eventually([&] { return overflow.count() >= 1; }, 20s));

  // Held: 1024 at the publisher, and what its reply window and our credits took before.
  std::uint64_t answers = 0, last = 0;
  while (const auto reply = control.recv_reply(1s)) {
    const auto answer = std::get<pubsub::detail::SubscriptionAnswer>(pubsub::detail::decode_reply(reply->bytes()));
    CHECK(answer.request_id > last);  // in order, with a gap where answers were dropped
    last = answer.request_id;
    ++answers;
  }
  CHECK(answers >= 1024);
  CHECK(answers < requests);
  CHECK(overflow.count() == 1);
}
