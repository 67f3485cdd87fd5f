// SPDX-License-Identifier: MIT
// Pub/sub listens like every receive socket: idle connections to a publisher's control port
// (hello only, or introduced and silent) up to its admission limit do not keep a subscriber
// out, on every back-end and in both modes.
#include "support/admission_peers.hpp"
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

TEST_CASE("pub/sub: the admission limit's worth of idle peers at a publisher does not keep a subscriber out",
          "[pubsub][admission][idle]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const auto mode = GENERATE(Mode::high_throughput, Mode::low_latency);
  netio::Context context(netio::test::context_options());
  PublishOptions publish_options;
  publish_options.admission.max_connections = 4;
  PublishSocket publisher(context, Endpoint::parse(base), publish_options);

  std::vector<std::unique_ptr<netio::test::HelloOnlyPeer>> idle;
  for (int i = 0; i < 4; ++i) {
    auto& peer = idle.emplace_back(std::make_unique<netio::test::HelloOnlyPeer>(context, publisher.local_endpoint()));
    REQUIRE(eventually([&] { return peer->connected() || peer->failed(); }));
    if (i % 2 == 1) peer->send(netio::detail::encode_introduction({"idle-" + std::to_string(i), std::nullopt}));
  }

  std::atomic<int> low_latency_messages{0};
  SubscribeSocket subscriber(context,
                             [&](Tag, std::span<const std::byte>, const netio::Peer&) { ++low_latency_messages; });
  subscriber.subscribe(publisher.local_endpoint(), 1, mode);
  publisher.publish(1, pubsub_message(1, 0));
  publisher.flush();
  if (mode == Mode::high_throughput) {
    const auto m = subscriber.recv(10s);
    REQUIRE(m);
    CHECK(m->tag() == 1);
  } else {
    CHECK(eventually([&] { return low_latency_messages.load() == 1; }));
  }
}
