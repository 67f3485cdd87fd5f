// SPDX-License-Identifier: MIT
// A subscription whose data connection the publisher cannot open is refused as soon as the
// connection fails, with the reason, not after connect_timeout.
#include "control_message.hpp"
#include "support/loopback_port.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "netio/low_latency_socket.hpp"
#include "netio/pubsub/publish_socket.hpp"

#include <catch2/catch.hpp>

#include <variant>

using netio::Endpoint;
using namespace std::chrono_literals;
namespace pubsub = netio::pubsub;

TEST_CASE("a subscription whose data endpoint refuses the publisher is refused at once, naming it",
          "[pubsub][integration]") {
  const auto base = Endpoint::parse(GENERATE(netio::test::loopback_endpoints()));
  netio::Context context(netio::test::context_options());
  pubsub::PublishOptions options;
  options.connect_timeout = 60s;  // the refusal must not wait for this
  pubsub::PublishSocket publisher(context, base, options);

  // An endpoint nobody listens on.
  const netio::test::LoopbackPort refusing(netio::test::LoopbackPort::Kind::refusing);
  const Endpoint closed = refusing.endpoint(base);

  netio::LowLatencySendSocket control(context, publisher.local_endpoint());
  pubsub::detail::SubscriptionRequest request;
  request.mode = GENERATE(pubsub::Mode::high_throughput, pubsub::Mode::low_latency);
  request.request_id = 7;
  request.tags = {3};
  request.data_endpoint = closed.to_string();
  const auto started = std::chrono::steady_clock::now();
  control.send(pubsub::detail::encode(request));
  const auto reply = control.recv_reply(30s);
  REQUIRE(reply);
  CHECK(std::chrono::steady_clock::now() - started < 20s);
  const auto answer = std::get<pubsub::detail::SubscriptionAnswer>(pubsub::detail::decode_reply(reply->bytes()));
  CHECK_FALSE(answer.accepted);
  CHECK(answer.request_id == 7);
  CHECK_THAT(answer.reason, Catch::Contains("could not connect to " + closed.to_string()));
  CHECK(publisher.stats().subscriptions == 0);
  CHECK(publisher.stats().connections == 0);
}
