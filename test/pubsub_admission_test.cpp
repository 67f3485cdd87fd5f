// SPDX-License-Identifier: MIT
// Who may subscribe, over real loopback connections on every back-end: a publisher and its
// subscribers holding the same pre-shared key work as without one; a subscriber without
// the key, with another key, or from a network the publisher does not allow is refused at
// once, with the reason, and a publisher the subscriber does not allow cannot open the data
// connection (so the subscription is refused too).
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <utility>

using netio::PreSharedKey;

namespace {

PreSharedKey key_of(char digit) { return PreSharedKey::from_hex(std::string(64, digit)); }

// The error subscribe() throws, and how long it took.
std::pair<std::string, std::chrono::steady_clock::duration> refusal(SubscribeSocket& subscriber, const Endpoint& at,
                                                                    Mode mode) {
  const auto started = std::chrono::steady_clock::now();
  try {
    subscriber.subscribe(at, 1, mode);
  } catch (const netio::Error& e) {
    return {e.what(), std::chrono::steady_clock::now() - started};
  }
  return {"", std::chrono::steady_clock::now() - started};
}

}  // namespace

TEST_CASE("pub/sub admission: with the same key on both sides, subscriptions and messages flow",
          "[pubsub][admission][auth]") {
  if (!PreSharedKey::supported()) {
    WARN("netio built without libsodium: authentication not tested");
    return;
  }
  const auto base = GENERATE(netio::test::loopback_endpoints());
  const auto mode = GENERATE(Mode::high_throughput, Mode::low_latency);
  const std::size_t max_connections = GENERATE(0, 1);  // without and with a connection limit
  netio::Context context(netio::test::context_options());
  PublishOptions publish_options;
  publish_options.admission.key = key_of('a');
  publish_options.max_connections = max_connections;
  PublishSocket publisher(context, Endpoint::parse(base), publish_options);
  std::atomic<int> low_latency_messages{0};
  SubscribeOptions options;
  options.admission.key = key_of('a');
  SubscribeSocket subscriber(
      context, [&](Tag, std::span<const std::byte>, const netio::Peer&) { ++low_latency_messages; }, options);
  subscriber.subscribe(publisher.local_endpoint(), 1, mode);
  publisher.publish(1, pubsub_message(1, 0));
  publisher.flush();
  if (mode == Mode::high_throughput) {
    const auto m = subscriber.recv(5s);
    REQUIRE(m);
    CHECK(m->tag() == 1);
  } else {
    CHECK(netio::test::eventually([&] { return low_latency_messages.load() == 1; }));
  }
}

TEST_CASE(
    "pub/sub admission: a subscriber without the key, with another key, or from a network not allowed is refused "
    "at once, with the reason",
    "[pubsub][admission][auth]") {
  if (!PreSharedKey::supported()) {
    WARN("netio built without libsodium: authentication not tested");
    return;
  }
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishOptions publish_options;
  publish_options.admission.key = key_of('a');
  PublishSocket keyed(context, Endpoint::parse(base), publish_options);
  PublishOptions far_options;
  far_options.admission.allow = netio::parse_peer_networks("10.0.0.0/8");
  PublishSocket far(context, Endpoint::parse(base), far_options);

  SubscribeOptions options;
  options.ack_timeout = 20s;  // a refusal must not wait for it
  const SubscribeSocket::Handler ignore = [](Tag, std::span<const std::byte>, const netio::Peer&) {};
  SECTION("no key") {
    SubscribeSocket subscriber(context, ignore, options);
    const auto [why, took] = refusal(subscriber, keyed.local_endpoint(), Mode::high_throughput);
    CHECK_THAT(why, Catch::Contains(keyed.local_endpoint().to_string()));
    CHECK_THAT(why, Catch::Contains("key"));
    CHECK(took < 10s);
  }
  SECTION("another key") {
    options.admission.key = key_of('b');
    SubscribeSocket subscriber(context, ignore, options);
    const auto [why, took] = refusal(subscriber, keyed.local_endpoint(), Mode::high_throughput);
    CHECK_THAT(why, Catch::Contains(keyed.local_endpoint().to_string()));
    CHECK_FALSE(why.empty());
    CHECK(took < 10s);
  }
  SECTION("a network not allowed") {
    SubscribeSocket subscriber(context, ignore, options);
    const auto [why, took] = refusal(subscriber, far.local_endpoint(), Mode::low_latency);
    CHECK_THAT(why, Catch::Contains(far.local_endpoint().to_string()));
    CHECK_THAT(why, Catch::Contains("not in the networks"));
    CHECK(took < 10s);
  }
  CHECK(keyed.stats().subscriptions == 0);
  CHECK(far.stats().subscriptions == 0);
}

TEST_CASE("pub/sub admission: a publisher the subscriber does not allow cannot open the data connection",
          "[pubsub][admission]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  SubscribeOptions options;
  options.admission.allow = netio::parse_peer_networks("10.0.0.0/8");
  SubscribeSocket subscriber(context, options);
  const auto [why, took] = refusal(subscriber, publisher.local_endpoint(), Mode::high_throughput);
  CHECK_THAT(why, Catch::Contains("refused by the publisher"));
  CHECK_THAT(why, Catch::Contains("not in the networks"));
  CHECK(publisher.stats().subscriptions == 0);
  CHECK(publisher.stats().connections == 0);
}
