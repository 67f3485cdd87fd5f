// SPDX-License-Identifier: MIT
// The pub/sub control messages (round trips, and every kind of damage rejected with a
// reason) and the publisher's subscription table, as pure logic.
#include "control_message.hpp"
#include "subscription_table.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <set>
#include <variant>
#include <vector>

using namespace netio::pubsub;
using namespace netio::pubsub::detail;

TEST_CASE("pub/sub control messages: requests, answers and drop reports survive a round trip", "[pubsub][unit]") {
  const SubscriptionRequest request{false,
                                    Mode::low_latency,
                                    Backpressure::drop,
                                    42,
                                    {0xFEDCBA9876543210ull, 0, 7},
                                    "fabric://10.0.0.1:5000?provider=tcp"};
  const auto decoded = decode_request(encode(request));
  CHECK(decoded.subscribe == false);
  CHECK(decoded.mode == Mode::low_latency);
  CHECK(decoded.backpressure == Backpressure::drop);
  CHECK(decoded.request_id == 42);
  CHECK(decoded.tags == std::vector<Tag>{0xFEDCBA9876543210ull, 0, 7});
  CHECK(decoded.data_endpoint == request.data_endpoint);

  const auto answer = std::get<SubscriptionAnswer>(decode_reply(encode(SubscriptionAnswer{false, 7, "no room"})));
  CHECK_FALSE(answer.accepted);
  CHECK(answer.request_id == 7);
  CHECK(answer.reason == "no room");

  const auto report = std::get<DropReport>(decode_reply(encode(DropReport{Mode::high_throughput, 9, 1234})));
  CHECK(report.mode == Mode::high_throughput);
  CHECK(report.tag == 9);
  CHECK(report.dropped == 1234);

  std::byte header[8];
  write_data_header(header, 0x0102030405060708ull);
  CHECK(std::to_integer<int>(header[0]) == 0x08);  // little-endian
  CHECK(read_data_header(header) == 0x0102030405060708ull);
  CHECK_FALSE(read_data_header(std::span<const std::byte>(header, 7)));
}

TEST_CASE("pub/sub control messages: truncated, oversized or foreign messages are refused with a reason",
          "[pubsub][unit]") {
  const auto good = encode(SubscriptionRequest{true, Mode::high_throughput, Backpressure::block, 1, {2}, "tcp://h:1"});
  auto refused = [](std::span<const std::byte> bytes, const std::string& reason) {
    try {
      decode_request(bytes);
    } catch (const netio::Error& e) {
      CHECK(e.code() == netio::Errc::protocol_error);
      CHECK_THAT(e.what(), Catch::Contains(reason));
      return;
    }
    FAIL("accepted: " << reason);
  };
  for (std::size_t cut = 0; cut < good.size(); ++cut) refused(std::span(good).first(cut), "truncated");
  auto longer = good;
  longer.push_back(std::byte{0});
  refused(longer, "left over");
  auto magic = good;
  magic[0] = std::byte{'X'};
  refused(magic, "magic");
  auto version = good;
  version[4] = std::byte{9};
  refused(version, "version 9");
  auto kind = good;
  kind[5] = std::byte{3};
  refused(kind, "neither subscribe nor unsubscribe");
  auto mode = good;
  mode[6] = std::byte{7};
  refused(mode, "unknown mode");
  auto policy = good;
  policy[7] = std::byte{3};
  refused(policy, "back-pressure");
  auto no_tags = good;  // the tag count follows magic, version, kind, mode, policy, request id
  no_tags[16] = std::byte{0};
  refused(no_tags, "0 tags");
  auto many_tags = good;
  many_tags[16] = std::byte{0x01};
  many_tags[17] = std::byte{0x01};  // 257
  refused(many_tags, "257 tags");
  auto length = good;
  length[26] = std::byte{0xFF};
  length[27] = std::byte{0x7F};
  refused(length, "at most 512");
  CHECK_THROWS_AS(
      encode(SubscriptionRequest{true, Mode::high_throughput, Backpressure::block, 1, {2}, std::string(600, 'x')}),
      netio::Error);
  CHECK_THROWS_AS(encode(SubscriptionRequest{true, Mode::high_throughput, Backpressure::block, 1, {}, "tcp://h:1"}),
                  netio::Error);
  CHECK_THROWS_AS(encode(SubscriptionRequest{true, Mode::high_throughput, Backpressure::block, 1,
                                             std::vector<Tag>(max_tags_per_request + 1, 5), "tcp://h:1"}),
                  netio::Error);
  // The largest request fits the publisher's control buffers.
  CHECK(encode(SubscriptionRequest{true, Mode::high_throughput, Backpressure::block, 1,
                                   std::vector<Tag>(max_tags_per_request, 5), std::string(max_endpoint_text, 'x')})
            .size() == max_request_size);
  CHECK_THROWS_WITH(decode_reply(good), Catch::Contains("unknown kind"));
}

TEST_CASE("pub/sub subscription table: routes per tag, one connection per (subscriber, mode), snapshots unchanged",
          "[pubsub][unit]") {
  SubscriptionTable table;
  auto connection = [](std::uint64_t id, Mode mode) {
    return std::make_shared<DataConnection>(
        SubscriberInfo{netio::Peer(), netio::Identity{fmt::format("s{}", id), {}}, {}, mode}, netio::Peer());
  };
  // A default Peer has connection id 0: give the subscribers distinct owners through modes
  // and ids of their own instead.
  const auto a = connection(1, Mode::high_throughput);
  const auto b = connection(2, Mode::low_latency);
  table.add_connection(a);
  table.add_connection(b);
  CHECK(table.find(0, Mode::high_throughput) == a);
  CHECK(table.find(0, Mode::low_latency) == b);

  using Tags = std::vector<Tag>;
  CHECK(table.subscribe(a, Tags{1}, Backpressure::block) == 1);
  CHECK(table.subscribe(a, Tags{2}, Backpressure::block) == 1);
  CHECK(table.subscribe(b, Tags{2}, Backpressure::drop) == 1);
  CHECK(table.subscribe(a, Tags{2}, Backpressure::drop) == 0);  // again: only the policy changes
  CHECK(table.subscription_count() == 3);
  const auto snapshot = table.routes();
  REQUIRE(snapshot->find(2) != nullptr);
  REQUIRE(snapshot->find(2)->size() == 2);
  CHECK((*snapshot->find(2))[0].backpressure == Backpressure::drop);

  CHECK(table.unsubscribe(0, Mode::high_throughput, Tags{1}) == nullptr);   // a still carries tag 2
  CHECK(table.unsubscribe(0, Mode::high_throughput, Tags{99}) == nullptr);  // unknown
  CHECK(table.unsubscribe(0, Mode::high_throughput, Tags{2}) == a);         // its last tag: close it
  CHECK(table.find(0, Mode::high_throughput) == nullptr);
  CHECK(table.subscription_count() == 1);
  CHECK(snapshot->tag_count() == 2);  // a reader's snapshot never changes under it
  CHECK(snapshot->route_count() == 3);

  const auto removed = table.remove_owner(0);
  CHECK(removed.size() == 1);
  CHECK(table.routes()->empty());
  CHECK(table.connection_count() == 0);
  CHECK(table.subscription_count() == 0);
}

TEST_CASE("pub/sub subscription table: a request's tags become routes in one change", "[pubsub][unit]") {
  SubscriptionTable table;
  const auto a = std::make_shared<DataConnection>(
      SubscriberInfo{netio::Peer(), netio::Identity{"a", {}}, {}, Mode::high_throughput}, netio::Peer());
  table.add_connection(a);
  CHECK(table.subscribe(a, std::vector<Tag>{4, 5, 6, 5}, Backpressure::block) == 3);  // 5 twice: one route
  CHECK(table.routes()->tag_count() == 3);
  CHECK(table.subscription_count() == 3);
  CHECK(a->tags() == std::set<Tag>{4, 5, 6});
  CHECK(table.unsubscribe(0, Mode::high_throughput, std::vector<Tag>{4, 6, 99}) == nullptr);
  CHECK(table.routes()->tag_count() == 1);
  CHECK(table.unsubscribe(0, Mode::high_throughput, std::vector<Tag>{5}) == a);
  CHECK(table.routes()->empty());
}
