// SPDX-License-Identifier: MIT
// The one little-endian codec of netio's wire formats (netio/internal/wire_codec.hpp) and the
// one error helper (netio/internal/reject.hpp): byte layout, round trips, and a read past the
// end refused with Errc::protocol_error naming the message and the field.
#include "netio/internal/wire_codec.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using netio::Errc;
using netio::Error;
using netio::detail::WireReader;
using netio::detail::WireWriter;

std::vector<std::byte> codec_bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (const int v : values) out.push_back(std::byte(v));
  return out;
}

// Runs `read` and requires Error(protocol_error) whose text contains `text`.
template <typename Read>
void require_refused(Read read, const std::string& text) {
  try {
    read();
    FAIL("not refused; expected: " << text);
  } catch (const Error& e) {
    CHECK(e.code() == Errc::protocol_error);
    CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

}  // namespace

TEST_CASE("wire codec: fields are little-endian, least significant byte first", "[wire]") {
  std::array<std::byte, 15> out{};
  WireWriter w(out);
  w.put(std::uint8_t{0xab});
  w.put(std::uint16_t{0x0102});
  w.put(std::uint32_t{0x03040506});
  w.put(std::uint64_t{0x0708090a0b0c0d0e});
  CHECK(w.written() == out.size());
  CHECK(std::vector<std::byte>(out.begin(), out.end()) ==
        codec_bytes({0xab, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07}));
  CHECK(netio::detail::load_le<std::uint32_t>(out.data() + 3) == 0x03040506);
  std::array<std::byte, 8> raw{};
  netio::detail::store_le<std::int64_t>(raw.data(), -2);
  CHECK(std::vector<std::byte>(raw.begin(), raw.end()) ==
        codec_bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST_CASE("wire codec: every width, signed values, strings and bytes round-trip", "[wire]") {
  WireWriter w;  // growing
  w.put_header(7, 1, 0x03);
  w.put(std::numeric_limits<std::uint64_t>::max());
  w.put(std::numeric_limits<std::int64_t>::min());
  w.put(std::int32_t{-5});
  w.put(std::uint16_t{65535});
  w.put_bits(0x123456, 3);
  w.put_string("tcp://127.0.0.1:5555", 64);
  w.put_string("", 64);
  const std::array<std::byte, 3> tail{std::byte{1}, std::byte{2}, std::byte{3}};
  w.put_bytes(tail);
  const auto bytes = w.take();
  REQUIRE(bytes.size() == 4 + 8 + 8 + 4 + 2 + 3 + (2 + 20) + 2 + 3);

  WireReader r(bytes, "test message");
  CHECK(r.get_header(7, 1, 0x03) == 0x03);
  CHECK(r.get<std::uint64_t>("a") == std::numeric_limits<std::uint64_t>::max());
  CHECK(r.get<std::int64_t>("b") == std::numeric_limits<std::int64_t>::min());
  CHECK(r.get<std::int32_t>("c") == -5);
  CHECK(r.get<std::uint16_t>("d") == 65535);
  CHECK(r.get_bits(3, "e") == 0x123456);
  CHECK(r.get_string("endpoint", 64) == "tcp://127.0.0.1:5555");
  CHECK(r.get_string("empty", 64).empty());
  const auto got = r.get_bytes(3, "tail");
  CHECK(std::vector<std::byte>(got.begin(), got.end()) == std::vector<std::byte>(tail.begin(), tail.end()));
  CHECK(r.remaining() == 0);
  CHECK_NOTHROW(r.expect_end());
}

TEST_CASE("wire codec: a read past the end is refused, naming the message and the field", "[wire]") {
  const auto bytes = codec_bytes({1, 2, 3, 4, 5});
  WireReader r(bytes, "probe");
  CHECK(r.get<std::uint32_t>("first") == 0x04030201);
  require_refused([&] { r.get<std::uint16_t>("second"); },
                  "probe: truncated at second (5 bytes, 2 needed from offset 4)");
  CHECK(r.offset() == 4);  // nothing consumed by the refused read
  require_refused([&] { r.get_bytes(2, "payload"); }, "truncated at payload");
  require_refused([&] { r.get_bits(8, "wide"); }, "truncated at wide");
  require_refused([&] { r.expect_end(); }, "probe: 1 bytes left over after the last field");

  WireReader empty(std::span<const std::byte>{}, "empty message");
  require_refused([&] { empty.get<std::uint8_t>("type"); },
                  "empty message: truncated at type (0 bytes, 1 needed from offset 0)");

  // A string whose length field runs past the end, and one longer than allowed.
  const auto short_string = codec_bytes({5, 0, 'a', 'b'});
  require_refused([&] { WireReader(short_string, "s").get_string("name", 64); }, "s: truncated at name");
  const auto long_string = codec_bytes({3, 0, 'a', 'b', 'c'});
  require_refused([&] { WireReader(long_string, "s").get_string("name", 2); },
                  "s: name is 3 bytes long, at most 2 allowed");
}

TEST_CASE("wire codec: sizes and the 4-byte header are checked", "[wire]") {
  const auto good = codec_bytes({9, 1, 0x01, 0, 0xff});
  require_refused([&] { WireReader(good, "m").expect_size(4); }, "m: 5 bytes, expected 4");
  require_refused([&] { WireReader(good, "m").expect_at_least(6); }, "m: 5 bytes, expected at least 6");
  CHECK_NOTHROW(WireReader(good, "m").expect_at_least(5));
  CHECK(WireReader(good, "m").get_header(9, 1, 0x01) == 0x01);
  require_refused([&] { WireReader(good, "m").get_header(8, 1, 0x01); }, "m: type byte 9, expected 8");
  require_refused([&] { WireReader(good, "m").get_header(9, 2, 0x01); }, "m: version 1, this side speaks 2");
  require_refused([&] { WireReader(good, "m").get_header(9, 1, 0x00); }, "m: unknown flags 1");
  const auto reserved = codec_bytes({9, 1, 0, 7});
  require_refused([&] { WireReader(reserved, "m").get_header(9, 1, 0); }, "m: reserved byte is 7");
  require_refused([&] { WireReader(std::span(good).first(3), "m").get_header(9, 1, 0x01); },
                  "m: truncated at reserved byte");
}

TEST_CASE("wire codec: writing past a fixed buffer is an encoder bug, an over-long string is refused", "[wire]") {
  std::array<std::byte, 5> out{};
  WireWriter w(out);
  w.put(std::uint32_t{1});
  CHECK_THROWS_AS(w.put(std::uint16_t{2}), std::logic_error);
  CHECK(w.written() == 4);
  WireWriter growing;
  try {
    growing.put_string("abc", 2);
    FAIL("not refused");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::message_too_large);
  }
}

TEST_CASE("reject: one error helper, \"subject: what\" with the code given", "[wire]") {
  constexpr netio::detail::Rejecter reject{Errc::invalid_option, "scheduler config"};
  try {
    reject("inputs is 0");
    FAIL("not thrown");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_option);
    CHECK(std::string(e.what()) == "scheduler config: inputs is 0");
  }
  try {
    netio::detail::reject(Errc::protocol_error, "", "bare");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::protocol_error);
    CHECK(std::string(e.what()) == "bare");
  }
}
