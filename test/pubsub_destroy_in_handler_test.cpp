// SPDX-License-Identifier: MIT
// A SubscribeSocket may be destroyed inside its own callbacks, on every back-end, as every
// socket may (docs/design/conventions.md): in the message handler while messages keep
// coming, in a subscribe() callback, and in on_subscriptions_lost. No callback runs after.
#include "support/pubsub_test.hpp"
#include "support/test_context.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <thread>

namespace {

SubscribeOptions quick_resubscription() {
  SubscribeOptions o;
  o.resubscribe_interval = 20ms;
  o.max_resubscribe_interval = 100ms;
  return o;
}

}  // namespace

TEST_CASE("pub/sub: a subscriber destroyed inside its message handler hears nothing after", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  std::unique_ptr<SubscribeSocket> subscriber;
  std::atomic<int> calls{0};
  std::atomic<int> after{0};  // calls that came once the socket was gone
  std::atomic<bool> destroyed{false};
  subscriber = std::make_unique<SubscribeSocket>(context, [&](Tag, std::span<const std::byte>, const netio::Peer&) {
    if (destroyed) ++after;
    if (++calls == 5) {
      subscriber.reset();  // on the loop thread, inside its own handler
      destroyed = true;
    }
  });
  subscriber->subscribe(publisher.local_endpoint(), 7, Mode::low_latency);
  for (std::uint64_t i = 0; i < 200 && !destroyed; ++i) publisher.publish(7, pubsub_message(7, i));
  REQUIRE(eventually([&] { return destroyed.load(); }));
  // The publisher may still send to the subscriber it has not yet found gone.
  for (std::uint64_t i = 0; i < 50; ++i) {
    netio::pubsub::PublishProgress progress;
    (void)publisher.try_publish(7, pubsub_message(7, i), progress);
  }
  std::this_thread::sleep_for(50ms);
  CHECK(calls.load() == 5);
  CHECK(after.load() == 0);
}

TEST_CASE("pub/sub: a subscriber destroyed inside its subscribe() callback", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  PublishSocket publisher(context, Endpoint::parse(base));
  auto subscriber = std::make_unique<SubscribeSocket>(context);
  std::atomic<int> done{0};
  std::atomic<bool> ok{false};
  const Tag tags[] = {1, 2, 3};
  subscriber->subscribe(publisher.local_endpoint(), tags, Mode::high_throughput, Backpressure::publisher_default,
                        [&](const netio::Error* error) {
                          ok = error == nullptr;
                          subscriber.reset();
                          ++done;
                        });
  REQUIRE(eventually([&] { return done.load() == 1; }));
  CHECK(ok);
  CHECK(eventually([&] { return publisher.stats().subscriptions == 0; }));  // the publisher saw it go
  std::this_thread::sleep_for(20ms);
  CHECK(done.load() == 1);
}

TEST_CASE("pub/sub: a subscriber destroyed inside on_subscriptions_lost", "[pubsub]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  netio::Context context(netio::test::context_options());
  auto publisher = std::make_unique<PublishSocket>(context, Endpoint::parse(base));
  std::unique_ptr<SubscribeSocket> subscriber;
  std::atomic<int> lost{0};
  std::atomic<int> resubscribed{0};
  auto options = quick_resubscription();
  options.on_subscriptions_lost = [&](const Endpoint&) {
    ++lost;
    subscriber.reset();
  };
  options.on_resubscribed = [&](const Endpoint&) { ++resubscribed; };
  subscriber = std::make_unique<SubscribeSocket>(context, options);
  const Endpoint at = publisher->local_endpoint();
  subscriber->subscribe(at, 1);
  subscriber->subscribe(at, 2);
  publisher.reset();  // the publisher goes away
  REQUIRE(eventually([&] { return lost.load() == 1; }));
  PublishSocket restarted(context, at);  // nobody comes back to it
  std::this_thread::sleep_for(300ms);    // several resubscription intervals
  CHECK(lost.load() == 1);
  CHECK(resubscribed.load() == 0);
  CHECK(restarted.stats().subscriptions == 0);
}
