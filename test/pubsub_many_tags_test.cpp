// SPDX-License-Identifier: MIT
// Subscribers of many tags, over real loopback connections on every back-end: one
// subscribe() call for many tags is one acknowledged request per 256 tags, routed from the
// acknowledgement on, and ended by one unsubscribe(); a restarted publisher gets every one
// of 600 subscriptions back (the resubscription packs them into requests instead of sending
// one request per tag through a control connection of 16 buffers); 9000 tags in one call
// (36 requests) wait for free control buffers instead of failing; max_tags_per_subscriber
// bounds what one subscriber can make the publisher hold.
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <numeric>
#include <set>
#include <thread>
#include <vector>
#include "netio/backend/event_loop.hpp"

namespace {

std::vector<Tag> tags_from(Tag first, std::size_t count) {
  std::vector<Tag> tags(count);
  std::iota(tags.begin(), tags.end(), first);
  return tags;
}

// The tags of the messages that arrive within `wait` (each message checked against its tag).
std::multiset<Tag> received_tags(SubscribeSocket& subscriber, std::chrono::milliseconds wait) {
  std::multiset<Tag> tags;
  while (auto m = subscriber.recv(wait)) {
    const auto expected = pubsub_message(m->tag(), 0);
    CHECK(std::equal(m->data().begin(), m->data().end(), expected.begin(), expected.end()));
    tags.insert(m->tag());
  }
  return tags;
}

}  // namespace

TEST_CASE("pub/sub: one subscribe() of 600 tags is acknowledged once all are routed, and one unsubscribe() ends them",
          "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  SubscribeSocket subscriber(context);

  const auto tags = tags_from(1, 600);  // three requests: 256, 256 and 88 tags
  subscriber.subscribe(publisher.local_endpoint(), tags, Mode::high_throughput);
  CHECK(publisher.stats().subscriptions == 600);  // all acknowledged, hence all routed
  CHECK(publisher.stats().connections == 1);
  for (const Tag tag : {Tag{1}, Tag{256}, Tag{257}, Tag{600}, Tag{601}}) publisher.publish(tag, pubsub_message(tag, 0));
  publisher.flush();
  CHECK(received_tags(subscriber, 500ms) == std::multiset<Tag>{1, 256, 257, 600});  // 601 is not ours

  subscriber.unsubscribe(publisher.local_endpoint(), tags_from(1, 599), Mode::high_throughput);
  CHECK(publisher.stats().subscriptions == 1);
  for (const Tag tag : {Tag{1}, Tag{300}, Tag{600}}) publisher.publish(tag, pubsub_message(tag, 0));
  publisher.flush();
  CHECK(received_tags(subscriber, 500ms) == std::multiset<Tag>{600});

  // Tags not subscribed are ignored; the last one closes the data connection.
  subscriber.unsubscribe(publisher.local_endpoint(), std::vector<Tag>{600, 9999}, Mode::high_throughput);
  CHECK(publisher.stats().subscriptions == 0);
  CHECK(eventually([&] { return publisher.stats().connections == 0; }));
  subscriber.subscribe(publisher.local_endpoint(), std::vector<Tag>{}, Mode::high_throughput);  // nothing to ask
  CHECK(publisher.stats().subscriptions == 0);
}

TEST_CASE("pub/sub: a low-latency subscription of several tags, made from the event-loop thread", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  std::mutex mutex;
  std::multiset<Tag> arrived;
  SubscribeOptions options;
  SubscribeSocket::Handler on_message = [&](Tag tag, std::span<const std::byte>, const netio::Peer&) {
    std::lock_guard lock(mutex);
    arrived.insert(tag);
  };
  SubscribeSocket subscriber(context, on_message, options);
  std::atomic<bool> acknowledged{false};
  const std::vector<Tag> tags{7, 8, 9};
  context.loop().post([&] {
    subscriber.subscribe(publisher.local_endpoint(), tags, Mode::low_latency, netio::pubsub::Backpressure::block,
                         [&](const netio::Error* error) {
                           CHECK(error == nullptr);
                           acknowledged = true;
                         });
  });
  REQUIRE(eventually([&] { return acknowledged.load(); }));
  CHECK(publisher.stats().subscriptions == 3);
  for (const Tag tag : {Tag{6}, Tag{7}, Tag{8}, Tag{9}}) publisher.publish(tag, pubsub_message(tag, 0));
  CHECK(eventually([&] {
    std::lock_guard lock(mutex);
    return arrived == std::multiset<Tag>{7, 8, 9};
  }));
}

TEST_CASE("pub/sub: 9000 tags in one call wait for free control buffers instead of failing", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  // Two processes' worth: the publisher's loop builds 36 route tables meanwhile (seconds
  // under a sanitizer), which must not hold up the subscriber's side of the handshake.
  netio::Context publisher_context(netio::test::context_options());
  netio::Context subscriber_context(netio::test::context_options());
  PublishOptions options;
  options.connect_timeout = 60s;  // what is tested is the queue, not the speed of a busy loop
  PublishSocket publisher(publisher_context, Endpoint::parse(base), options);
  SubscribeOptions subscribe_options;
  subscribe_options.ack_timeout = 60s;
  SubscribeSocket subscriber(subscriber_context, subscribe_options);
  subscriber.subscribe(publisher.local_endpoint(), tags_from(1, 9000));  // 36 requests, 32 control buffers
  CHECK(publisher.stats().subscriptions == 9000);
  publisher.publish(9000, pubsub_message(9000, 0));
  publisher.flush();
  CHECK(received_tags(subscriber, 500ms) == std::multiset<Tag>{9000});
}

TEST_CASE("pub/sub: a restarted publisher gets all 600 subscriptions of a subscriber back", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  std::atomic<int> resubscribed{0};
  SubscribeOptions options;
  options.resubscribe_interval = 20ms;
  options.max_resubscribe_interval = 200ms;
  options.on_resubscribed = [&](const Endpoint&) { ++resubscribed; };
  SubscribeSocket subscriber(context, options);

  auto publisher = std::make_unique<PublishSocket>(context, Endpoint::parse(base));
  const Endpoint at = publisher->local_endpoint();
  // One tag at a time, as an application adding subscriptions over its life does.
  for (const Tag tag : tags_from(1, 600)) subscriber.subscribe(at, tag, Mode::high_throughput);
  REQUIRE(publisher->stats().subscriptions == 600);
  publisher.reset();
  std::this_thread::sleep_for(100ms);

  PublishSocket restarted(context, at);  // the same endpoint
  REQUIRE(eventually([&] { return resubscribed.load() == 1; }, 20s));
  CHECK(restarted.stats().subscriptions == 600);
  for (const Tag tag : {Tag{1}, Tag{400}, Tag{600}}) restarted.publish(tag, pubsub_message(tag, 0));
  restarted.flush();
  CHECK(received_tags(subscriber, 500ms) == std::multiset<Tag>{1, 400, 600});
}

TEST_CASE("pub/sub: wait_for_subscribers() returns once every subscriber's every tag is routed", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  constexpr std::size_t subscribers = 3;
  std::vector<std::unique_ptr<SubscribeSocket>> sockets;
  for (std::size_t i = 0; i < subscribers; ++i) sockets.push_back(std::make_unique<SubscribeSocket>(context));
  std::vector<std::thread> joining;
  for (std::size_t i = 0; i < subscribers; ++i) {
    joining.emplace_back([&, i] { sockets[i]->subscribe(publisher.local_endpoint(), tags_from(1000 * (i + 1), 300)); });
  }
  const bool in = publisher.wait_for_subscribers(subscribers, 20s);
  // Published the moment the wait returns: each subscriber's last tag reaches it.
  for (std::size_t i = 0; i < subscribers; ++i) {
    const Tag last = 1000 * (i + 1) + 299;
    publisher.publish(last, pubsub_message(last, 0));
  }
  publisher.flush();
  for (auto& t : joining) t.join();
  REQUIRE(in);
  CHECK(publisher.stats().subscribers == subscribers);
  for (std::size_t i = 0; i < subscribers; ++i) {
    CHECK(received_tags(*sockets[i], 500ms) == std::multiset<Tag>{1000 * (i + 1) + 299});
  }
  CHECK_FALSE(publisher.wait_for_subscribers(subscribers + 1, 50ms));
}

TEST_CASE("pub/sub: a subscriber is held to max_tags_per_subscriber, tags it holds already do not count again",
          "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishOptions options;
  options.max_tags_per_subscriber = 300;
  PublishSocket publisher(context, Endpoint::parse(base), options);
  SubscribeOptions subscribe_options;
  SubscribeSocket subscriber(
      context, [](Tag, std::span<const std::byte>, const netio::Peer&) {}, subscribe_options);

  subscriber.subscribe(publisher.local_endpoint(), tags_from(1, 250), Mode::high_throughput);
  // 250 held + 60 new (10 of the 70 asked for are held already) = 310 > 300: refused whole.
  try {
    subscriber.subscribe(publisher.local_endpoint(), tags_from(241, 70), Mode::high_throughput);
    FAIL("a subscription beyond the limit was taken");
  } catch (const netio::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_tags_per_subscriber (300)"));
  }
  CHECK(publisher.stats().subscriptions == 250);
  // Held tags again, and new ones up to the limit: taken.
  subscriber.subscribe(publisher.local_endpoint(), tags_from(201, 100), Mode::high_throughput);
  CHECK(publisher.stats().subscriptions == 300);
  // The limit is per mode: the low-latency side has its own.
  subscriber.subscribe(publisher.local_endpoint(), tags_from(1, 10), Mode::low_latency);
  CHECK(publisher.stats().subscriptions == 310);
  // Room again after an unsubscribe.
  subscriber.unsubscribe(publisher.local_endpoint(), tags_from(1, 50), Mode::high_throughput);
  subscriber.subscribe(publisher.local_endpoint(), tags_from(1001, 50), Mode::high_throughput);
  CHECK(publisher.stats().subscriptions == 310);
  publisher.publish(1001, pubsub_message(1001, 0));
  publisher.flush();
  const auto m = subscriber.recv(5s);
  REQUIRE(m);
  CHECK(m->tag() == 1001);
}
