// SPDX-License-Identifier: MIT
// netio_recv --subscribe reads everything a publisher sent before it left: a publisher that
// ends its streams and closes at once is not "gone without ending its streams" while its last
// pages still wait in the subscriber's queue or in the data connection. On both back-ends and
// both modes.
#include "common/deadline.hpp"
#include "throughput/bench_publisher.hpp"
#include "throughput/bench_subscriber.hpp"

#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <string>

namespace {

using namespace netio::test;
using netio::tools::ReceiveEnd;

}  // namespace

TEST_CASE("netio_recv --subscribe: a publisher that ends its streams and leaves at once loses nothing",
          "[tools][pubsub]") {
  const auto base = GENERATE(loopback_endpoints());
  const auto mode = GENERATE(netio::pubsub::Mode::high_throughput, netio::pubsub::Mode::low_latency);
  // Each side in a context of its own, as two processes. The subscriber's incoming link is
  // slow (an emulated 200 Mb/s): when the publisher has sent everything and closes, its data
  // connection still holds most of the stream, while the control connection's end arrives at
  // once.
  netio::Context publishing;
  netio::ContextOptions slow_link;
  slow_link.emulation = netio::parse_emulation_spec("in=200Mbps");
  netio::Context subscribing(slow_link);
  const std::uint64_t messages = 128;  // 8 MiB: 0.3 s at 200 Mb/s

  netio::tools::BenchPublisherOptions publisher;
  publisher.local = netio::Endpoint::parse(base);
  publisher.tags = {1};
  publisher.sizes = {64 * 1024};
  publisher.messages_per_size = messages;
  std::promise<netio::Endpoint> listening;
  netio::tools::BenchPublisherCallbacks publisher_callbacks;
  publisher_callbacks.on_listening = [&](const netio::Endpoint& bound) { listening.set_value(bound); };
  const netio::tools::Deadline deadline(std::chrono::seconds(60));
  auto published = std::async(std::launch::async, [&] {
    return netio::tools::run_bench_publisher(publishing, publisher, deadline, publisher_callbacks);
  });

  netio::tools::BenchSubscriberOptions subscriber;
  subscriber.publisher = listening.get_future().get();
  subscriber.tags = {1};
  subscriber.mode = mode;
  subscriber.verify = true;
  subscriber.interval = std::chrono::nanoseconds::zero();
  const auto report = netio::tools::run_bench_subscriber(subscribing, subscriber, deadline, {});
  REQUIRE(published.wait_for(30s) == std::future_status::ready);
  CHECK_FALSE(published.get().error);

  CHECK(report.end == ReceiveEnd::end_of_stream);
  REQUIRE(report.merged.size() == 1);
  CHECK(report.merged[0].complete);
  CHECK(report.merged[0].messages == messages);
  REQUIRE(report.merged[0].verification);
  CHECK(report.merged[0].verification->lost == 0);
}
