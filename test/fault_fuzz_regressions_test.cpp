// SPDX-License-Identifier: MIT
// Inputs the fuzz targets (test/fuzz, scripts/fuzz.sh) found, kept as regression tests of the
// normal suite. Under UBSan (scripts/test.sh --sanitize address) they fail without their fix.
#include "netio/emulation.hpp"
#include "netio/error.hpp"
#include "page_format.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

TEST_CASE("fuzz finding: an empty page in the middle of a message copies nothing from nowhere",
          "[faults][page_format]") {
  // fuzz_page_parser: a message continuing over an empty page reached memcpy(dst, nullptr, 0),
  // undefined behaviour, when the page's span has no data pointer.
  std::vector<std::byte> first(8 + 4);
  first[0] = std::byte{10};  // a 10-byte message, 4 bytes of it in this page
  std::memcpy(first.data() + 8, "abcd", 4);
  std::vector<std::byte> last(6);
  std::memcpy(last.data(), "efghij", 6);
  for (const bool with_spare : {false, true}) {
    std::vector<std::byte> buffer = first;
    buffer.resize(first.size() + (with_spare ? 64 : 0));
    auto owner = std::make_shared<int>(0);
    netio::detail::PageParser parser(1 << 20);
    parser.set_page(std::span<const std::byte>(buffer.data(), first.size()),
                    std::span<std::byte>(buffer.data() + first.size(), buffer.size() - first.size()), owner);
    REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
    parser.set_page({});  // empty, data() == nullptr
    REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
    parser.set_page({});
    REQUIRE(parser.next() == netio::detail::PageParser::Result::need_page);
    parser.set_page(last);
    REQUIRE(parser.next() == netio::detail::PageParser::Result::message);
    const auto view = parser.view();
    REQUIRE(view.size() == 10);
    CHECK(std::memcmp(view.data(), "abcdefghij", 10) == 0);
  }
}

TEST_CASE("fuzz finding: an absurd rate in an emulation spec is refused, not overflowed", "[faults][emulated]") {
  // fuzz_strings: out=1022222222222222222222222222222Gbps made the default burst (4 ms at that
  // rate) overflow its conversion to an integer (undefined behaviour).
  CHECK_THROWS_AS(netio::parse_emulation_spec("out=1022222222222222222222222222222Gbps"), netio::Error);
  CHECK_THROWS_AS(netio::parse_emulation_spec("rate=2000000000000GB/s"), netio::Error);
  CHECK_NOTHROW(netio::parse_emulation_spec("rate=400Gbps;in=1000GB/s"));
}

TEST_CASE("fuzz finding: an absurd duration in an emulation spec is refused, not overflowed", "[faults][emulated]") {
  // fuzz_strings: every=11111111111111s overflowed the conversion to int64 nanoseconds.
  CHECK_THROWS_AS(netio::parse_emulation_spec("rate=1Gbps;slowdown=node,at=1s,for=2s,every=11111111111111s,rate=50%"),
                  netio::Error);
  CHECK_NOTHROW(netio::parse_emulation_spec("rate=1Gbps;slowdown=node,at=1s,for=2s,every=3600s,rate=50%"));
}
