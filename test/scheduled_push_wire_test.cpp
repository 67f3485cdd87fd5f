// SPDX-License-Identifier: MIT
// The data-connection messages of the scheduled-push pattern: round trips, and rejection of
// truncated, extended or inconsistent input.
#include "netio/error.hpp"
#include "netio/scheduled_push/wire.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace netio;
using namespace netio::scheduled_push;

namespace {

template <typename Decode>
bool rejects(Decode decode, std::vector<std::byte> bytes) {
  try {
    decode(std::span<const std::byte>(bytes));
  } catch (const Error& e) {
    return e.code() == make_error_code(Errc::protocol_error);
  }
  return false;
}

template <typename Array>
std::vector<std::byte> vec(const Array& a) {
  return {a.begin(), a.end()};
}

}  // namespace

TEST_CASE("Scheduled-push data messages round-trip", "[scheduled_push]") {
  const Hello hello{2, 1, 4, 3, 1200, 4096, Mode::dfs};
  CHECK(decode_hello(encode(hello)) == hello);
  CHECK(wire_type(encode(hello)) == WireType::hello);
  const Hello best_effort{0, 0, 1, 1, 1, 1, Mode::best_effort};
  CHECK(decode_hello(encode(best_effort)) == best_effort);

  const std::vector<std::byte> payload{std::byte{1}, std::byte{2}, std::byte{3}};
  const auto message = encode_contribution(3, 0x1'0000'0007ull, payload);
  REQUIRE(message.size() == contribution_header_size + 3);
  const auto header = decode_contribution(message);
  CHECK(header.input == 3);
  CHECK(header.timeslice == 0x1'0000'0007ull);
  CHECK(header.length == 3);
  CHECK(std::vector<std::byte>(message.begin() + contribution_header_size, message.end()) == payload);
  CHECK(decode_contribution(encode_contribution(0, 0, {})).length == 0);

  CHECK(decode_welcome(encode(Welcome{2, 17})) == Welcome{2, 17});
  CHECK(decode_acknowledgement(encode_acknowledgement(99)) == 99);
  CHECK(decode_credit(encode(Credit{5, true})) == Credit{5, true});
  CHECK(decode_credit(encode(Credit{6, false})) == Credit{6, false});
  CHECK(decode_refusal(encode_refusal("wrong system")) == "wrong system");
  CHECK(decode_refusal(encode_refusal(std::string(5000, 'x'))).size() == max_refusal_text);
}

TEST_CASE("Scheduled-push input joins: the standby hello and the join message round-trip", "[scheduled_push]") {
  Hello standby{2, 0, 3, 3, 12, 1024, Mode::dfs};
  standby.standby = true;
  CHECK(decode_hello(encode(standby)) == standby);
  CHECK(decode_hello(encode(Hello{2, 0, 3, 3, 12, 1024, Mode::dfs})).standby == false);
  CHECK(decode_input_join(encode(InputJoin{2, 0})) == InputJoin{2, 0});
  CHECK(decode_input_join(encode(InputJoin{7, 0x1'0000'0024ull})) == InputJoin{7, 0x1'0000'0024ull});
  CHECK(wire_type(encode(InputJoin{1, 36})) == WireType::input_join);
  auto join = vec(encode(InputJoin{1, 36}));
  join.pop_back();
  CHECK(rejects(decode_input_join, join));
  auto flagged = vec(encode(InputJoin{1, 36}));
  flagged[2] = std::byte{1};
  CHECK(rejects(decode_input_join, flagged));
  CHECK(rejects(decode_input_join, vec(encode(Credit{1, false}))));
  CHECK(rejects(wire_type, std::vector<std::byte>{std::byte{0x1a}}));
}

TEST_CASE("Scheduled-push data messages with wrong sizes, types or bits are rejected", "[scheduled_push]") {
  auto hello = vec(encode(Hello{1, 1, 2, 2, 4, 8, Mode::best_effort}));
  CHECK(rejects(decode_hello, std::vector<std::byte>(hello.begin(), hello.end() - 1)));
  auto longer = hello;
  longer.push_back(std::byte{0});
  CHECK(rejects(decode_hello, longer));
  auto bad_version = hello;
  bad_version[1] = std::byte{2};
  CHECK(rejects(decode_hello, bad_version));
  auto bad_flags = hello;
  bad_flags[2] = std::byte{0x80};
  CHECK(rejects(decode_hello, bad_flags));
  auto reserved = hello;
  reserved[3] = std::byte{1};
  CHECK(rejects(decode_hello, reserved));
  CHECK(rejects(decode_welcome, hello));  // a hello is no welcome

  // A contribution whose length field disagrees with the bytes that follow.
  auto contribution = encode_contribution(0, 1, std::vector<std::byte>(10));
  contribution.pop_back();
  CHECK(rejects(decode_contribution, contribution));
  contribution.push_back(std::byte{0});
  contribution.push_back(std::byte{0});
  CHECK(rejects(decode_contribution, contribution));
  CHECK(rejects(decode_contribution, std::vector<std::byte>(10)));

  CHECK(rejects(decode_welcome, vec(encode(Welcome{0, 0}))));  // no credits granted
  auto refusal = encode_refusal("abc");
  refusal.push_back(std::byte{'d'});
  CHECK(rejects(decode_refusal, refusal));
  CHECK(rejects(wire_type, std::vector<std::byte>{}));
  CHECK(rejects(wire_type, std::vector<std::byte>{std::byte{0x03}}));  // a DFS proposal's type
  CHECK(rejects(decode_credit, vec(encode_acknowledgement(1))));
}
