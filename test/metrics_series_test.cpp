// SPDX-License-Identifier: MIT
// The series read from state the sockets keep anyway (docs/guide/metrics.md): a receive
// socket's budget held and replies queued follow its connections; drops by tag are bounded.
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/metrics.hpp"
#include "netio/receive_budget.hpp"
#include "support/metric_sample.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include "drops_by_tag.hpp"  // patterns/pubsub/src

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

using Labels = netio::test::MetricLabels;
using netio::test::sample;

TEST_CASE("metrics: a receive socket's budget held and replies queued follow its connections", "[metrics]") {
  const auto base = GENERATE(netio::test::loopback_endpoints());
  CAPTURE(base);
  netio::Context context(netio::test::context_options());
  std::mutex mutex;
  std::optional<netio::Peer> client_peer;  // guarded by mutex
  netio::LowLatencyReceiveOptions service_options;
  service_options.reply_window = 4;
  netio::LowLatencyReceiveSocket service(
      context, netio::Endpoint::parse(base),
      [&](std::span<const std::byte>, const netio::Peer& peer) {
        std::lock_guard lock(mutex);
        client_peer = peer;
      },
      service_options);
  const Labels at{{"socket", "low_latency_receive"}, {"endpoint", service.local_endpoint().to_string()}};
  auto gauge = [&](const char* name) { return sample(context.metrics().collect(), name, at).value_or(-1); };
  CHECK(gauge("netio_socket_replies_queued") == 0);
  CHECK(gauge("netio_socket_budget_held_bytes") == 0);
  CHECK(gauge("netio_socket_budget_limit_bytes") == double(service.memory_budget().limit()));
  CHECK(sample(context.metrics().collect(), "netio_socket_budget_held_bytes", {{"budget", "own"}}));
  {
    constexpr std::size_t reply_size = 64 * 1024;
    netio::LowLatencySendOptions options;
    options.replies.max_size = reply_size;
    options.replies.credits = 1;  // takes one reply, and this test never does: the rest wait
    netio::LowLatencySendSocket client(context, service.local_endpoint(), options);
    client.send(std::vector<std::byte>(16));
    REQUIRE(netio::test::eventually([&] {
      std::lock_guard lock(mutex);
      return client_peer.has_value();
    }));
    const netio::Peer to = [&] {
      std::lock_guard lock(mutex);
      return *client_peer;
    }();
    // Replies until the window stays full: what the kernel takes on the way is sent, the rest
    // queued. One refusal is not that: the loop may not yet have handed the window's replies
    // to a kernel that still has room (then none is queued). Refused for 200 ms on end, with
    // the loop free to move them, the kernel's buffers are full.
    const std::vector<std::byte> reply(reply_size);
    using Clock = std::chrono::steady_clock;
    Clock::time_point refused_since = Clock::time_point::max();  // max: the last try was taken
    const auto give_up = Clock::now() + 20s;
    bool stays_full = false;
    for (auto now = Clock::now(); now < give_up && !stays_full; now = Clock::now()) {
      if (to.try_reply(reply)) {
        refused_since = Clock::time_point::max();
        continue;
      }
      refused_since = std::min(refused_since, now);
      stays_full = now - refused_since >= 200ms;
      std::this_thread::sleep_for(1ms);  // the loop moves what it can
    }
    REQUIRE(stays_full);
    CHECK(gauge("netio_socket_replies_queued") >= 1);
    CHECK(gauge("netio_socket_replies_queued") <= 4);
    CHECK(gauge("netio_socket_budget_held_bytes") >= reply_size);  // the replies' buffers, the connection's
  }
  // The client gone, its connection's replies and buffers go with it.
  CHECK(netio::test::eventually(
      [&] { return gauge("netio_socket_replies_queued") == 0 && gauge("netio_socket_budget_held_bytes") == 0; }));
  CHECK(gauge("netio_socket_budget_peak_bytes") >= 64 * 1024);
}

TEST_CASE("metrics: drops by tag keep a series per tag up to the bound, the rest under \"other\"", "[metrics]") {
  using Series = std::vector<std::pair<std::string, std::uint64_t>>;
  netio::pubsub::detail::DropsByTag drops;
  CHECK(drops.snapshot() == Series{{"other", 0}});  // there before the first drop
  drops.add(7, 3);
  drops.add(7, 2);
  CHECK(drops.snapshot() == Series{{"7", 5}, {"other", 0}});
  for (netio::pubsub::Tag tag = 100; tag < 100 + 2 * netio::pubsub::detail::max_tags_with_drop_series; ++tag)
    drops.add(tag, 1);
  drops.add(7, 1);  // a tag with a series keeps it
  const auto all = drops.snapshot();
  REQUIRE(all.size() == netio::pubsub::detail::max_tags_with_drop_series + 1);
  CHECK(all.back().first == "other");
  CHECK(all.back().second == netio::pubsub::detail::max_tags_with_drop_series + 1);
}
