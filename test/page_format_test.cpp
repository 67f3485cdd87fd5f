// SPDX-License-Identifier: MIT
#include "page_format.hpp"
#include "netio/internal/little_endian.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace netio::detail;
using netio::test::pattern;

namespace {

// Packs messages into pages as the send socket does.
std::vector<std::vector<std::byte>> pack(const std::vector<std::vector<std::byte>>& messages, std::size_t page_size) {
  std::vector<std::vector<std::byte>> pages;
  std::vector<std::byte> page(page_size);
  std::size_t used = 0;
  auto close_page = [&] {
    pages.emplace_back(page.begin(), page.begin() + static_cast<std::ptrdiff_t>(used));
    used = 0;
  };
  for (const auto& m : messages) {
    MessagePacker packer(m);
    while (!packer.done()) {
      packer.fill(page.data(), used, page_size);
      if (MessagePacker::page_full(used, page_size)) close_page();
    }
  }
  if (used > 0) close_page();
  return pages;
}

std::vector<std::vector<std::byte>> parse(const std::vector<std::vector<std::byte>>& pages, std::size_t max_message) {
  std::vector<std::vector<std::byte>> out;
  PageParser parser(max_message);
  for (const auto& p : pages) {
    REQUIRE(p.size() > 0);  // empty pages are never sent
    parser.set_page(p);
    for (;;) {
      const auto r = parser.next();
      REQUIRE(r != PageParser::Result::error);
      if (r == PageParser::Result::need_page) break;
      out.emplace_back(parser.view().begin(), parser.view().end());
    }
  }
  CHECK_FALSE(parser.mid_message());
  return out;
}

// Parses pages that each sit at the start of a buffer of `capacity` bytes, as the receive
// socket hands them over (bytes, the writable rest of the buffer, its owner).
struct ParsedInBuffers {
  std::vector<std::vector<std::byte>> messages;
  std::size_t joined = 0;
  std::size_t reassembled = 0;
};

ParsedInBuffers parse_in_buffers(const std::vector<std::vector<std::byte>>& pages, std::size_t capacity,
                                 std::size_t max_message) {
  ParsedInBuffers out;
  PageParser parser(max_message);
  for (const auto& p : pages) {
    REQUIRE(p.size() <= capacity);
    auto buffer = std::make_shared<std::vector<std::byte>>(capacity, std::byte{0xee});
    std::copy(p.begin(), p.end(), buffer->begin());
    const std::span<std::byte> all(*buffer);
    parser.set_page(all.first(p.size()), all.subspan(p.size()), buffer);
    for (;;) {
      const auto r = parser.next();
      REQUIRE(r != PageParser::Result::error);
      if (r == PageParser::Result::need_page) break;
      if (parser.joined_page()) {
        ++out.joined;
        // The view lies in the page the message started in, which the parser still holds.
        const auto* start = static_cast<const std::vector<std::byte>*>(parser.joined_page().get())->data();
        CHECK(parser.view().data() >= start);
      }
      if (parser.reassembled()) ++out.reassembled;
      out.messages.emplace_back(parser.view().begin(), parser.view().end());
    }
    buffer.reset();
  }
  CHECK_FALSE(parser.mid_message());
  return out;
}

}  // namespace

TEST_CASE("random messages from 0 B to 4x the page size round-trip through pages", "[page_format]") {
  const std::size_t page_size = GENERATE(64, 4096, 65536);
  std::mt19937_64 rng(page_size);
  std::uniform_int_distribution<std::size_t> size(0, 4 * page_size);
  std::vector<std::vector<std::byte>> messages;
  for (std::uint64_t i = 0; i < 300; ++i) messages.push_back(pattern(i % 10 == 0 ? 0 : size(rng), i));
  const auto pages = pack(messages, page_size);
  for (const auto& p : pages) CHECK(p.size() <= page_size);
  CHECK(parse(pages, 4 * page_size) == messages);
}

TEST_CASE("messages that fill a page exactly, and lengths that would straddle a page", "[page_format]") {
  const std::size_t page_size = 64;
  SECTION("exactly full pages") {
    const std::vector<std::vector<std::byte>> messages = {pattern(56, 1), pattern(56, 2), pattern(24, 3),
                                                          pattern(24, 4)};
    const auto pages = pack(messages, page_size);
    REQUIRE(pages.size() == 3);
    CHECK(pages[0].size() == 64);
    CHECK(pages[1].size() == 64);
    CHECK(parse(pages, 1024) == messages);
  }
  SECTION("fewer than 8 bytes left: the length goes to the next page") {
    const std::vector<std::vector<std::byte>> messages = {pattern(50, 1), pattern(10, 2)};
    const auto pages = pack(messages, page_size);
    REQUIRE(pages.size() == 2);
    CHECK(pages[0].size() == 58);
    CHECK(parse(pages, 1024) == messages);
  }
  SECTION("a split message spans three pages") {
    const std::vector<std::vector<std::byte>> messages = {pattern(150, 9)};
    const auto pages = pack(messages, page_size);
    CHECK(pages.size() == 3);
    CHECK(parse(pages, 1024) == messages);
  }
}

TEST_CASE("a length that ends one page and a message filling the next is handed out in place", "[page_format]") {
  // How large messages travel: the length alone closes a page, the bytes come as a page of
  // their own (or several, the last one partly filled).
  const auto message = pattern(64, 7);
  std::vector<std::byte> first(8 + 8 + 8);
  store_le<std::uint64_t>(first.data(), 8);  // an 8-byte message first
  store_le<std::uint64_t>(first.data() + 16, message.size());
  PageParser parser(1024);
  parser.set_page(first);
  REQUIRE(parser.next() == PageParser::Result::message);
  CHECK(parser.view().size() == 8);
  REQUIRE(parser.next() == PageParser::Result::need_page);
  CHECK(parser.mid_message());
  SECTION("the whole message in the next page: a view of that page") {
    parser.set_page(message);
    REQUIRE(parser.next() == PageParser::Result::message);
    CHECK_FALSE(parser.reassembled());
    CHECK(parser.view().data() == message.data());
    CHECK(std::vector<std::byte>(parser.view().begin(), parser.view().end()) == message);
    CHECK(parser.next() == PageParser::Result::need_page);
  }
  SECTION("spread over two more pages: reassembled") {
    const std::vector<std::byte> head(message.begin(), message.begin() + 40), tail(message.begin() + 40, message.end());
    parser.set_page(head);
    REQUIRE(parser.next() == PageParser::Result::need_page);
    parser.set_page(tail);
    REQUIRE(parser.next() == PageParser::Result::message);
    CHECK(parser.reassembled());
    CHECK(parser.take_reassembled() == message);
  }
  CHECK_FALSE(parser.mid_message());
}

TEST_CASE("malformed pages are rejected with a reason", "[page_format]") {
  PageParser parser(1000);
  std::vector<std::byte> page(16);
  SECTION("a length beyond the limit") {
    store_le<std::uint64_t>(page.data(), 1001);
    parser.set_page(page);
    CHECK(parser.next() == PageParser::Result::error);
    CHECK_THAT(parser.error(), Catch::Contains("1001"));
  }
  SECTION("trailing bytes too few for a length") {
    store_le<std::uint64_t>(page.data(), 3);
    page.resize(8 + 3 + 5);
    parser.set_page(page);
    REQUIRE(parser.next() == PageParser::Result::message);
    CHECK(parser.view().size() == 3);
    CHECK(parser.next() == PageParser::Result::error);
    CHECK_THAT(parser.error(), Catch::Contains("truncated page"));
  }
  SECTION("junk: a huge length") {
    for (auto& b : page) b = std::byte{0xff};
    parser.set_page(page);
    CHECK(parser.next() == PageParser::Result::error);
  }
}

TEST_CASE("a message that spans pages is joined in the spare room of the page it started in", "[page_format]") {
  const std::size_t page_size = 4096;
  // 300 messages of 0 to 3 pages, packed into pages.
  auto random_messages = [&](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> size(0, 3 * page_size);
    std::vector<std::vector<std::byte>> messages;
    for (std::uint64_t i = 0; i < 300; ++i) messages.push_back(pattern(size(rng), i));
    return messages;
  };
  SECTION("random messages, buffers with room for the largest: nothing is reassembled") {
    const auto messages = random_messages(11);
    const auto parsed = parse_in_buffers(pack(messages, page_size), 4 * page_size, 3 * page_size);
    CHECK(parsed.messages == messages);
    CHECK(parsed.joined > 50);
    CHECK(parsed.reassembled == 0);
  }
  SECTION("random messages, buffers with a little room: joined where it fits, reassembled where not") {
    const auto messages = random_messages(12);
    const auto parsed = parse_in_buffers(pack(messages, page_size), page_size + page_size / 2, 3 * page_size);
    CHECK(parsed.messages == messages);
    CHECK(parsed.joined > 10);
    CHECK(parsed.reassembled > 10);
  }
  SECTION("buffers without room: reassembled as before") {
    const std::vector<std::vector<std::byte>> messages = {pattern(30, 1), pattern(150, 2), pattern(20, 3)};
    const auto pages = pack(messages, 64);
    const auto parsed = parse_in_buffers(pages, 64, 1024);
    CHECK(parsed.messages == messages);
    CHECK(parsed.joined == 0);
    CHECK(parsed.reassembled == 1);
  }
}

TEST_CASE("a large message sent as a length and two frames is joined in the first frame's buffer", "[page_format]") {
  // How libfabric's tcp provider delivers a lent 1 MiB message: the length ends a page, the
  // bytes come in frames of at most 768 KiB, each received into a 1 MiB buffer.
  const std::size_t capacity = 1024, frame = 768;
  const auto message = pattern(capacity, 5);
  std::vector<std::byte> first(8);
  store_le<std::uint64_t>(first.data(), message.size());
  auto first_frame = std::make_shared<std::vector<std::byte>>(capacity);
  auto second_frame = std::make_shared<std::vector<std::byte>>(capacity);
  std::copy(message.begin(), message.begin() + frame, first_frame->begin());
  std::copy(message.begin() + frame, message.end(), second_frame->begin());
  const std::span<std::byte> one(*first_frame), two(*second_frame);
  const std::byte* const first_frame_data = first_frame->data();

  PageParser parser(capacity);
  parser.set_page(first);
  REQUIRE(parser.next() == PageParser::Result::need_page);
  parser.set_page(one.first(frame), one.subspan(frame), std::move(first_frame));
  REQUIRE(parser.next() == PageParser::Result::need_page);
  CHECK(parser.mid_message());
  parser.set_page(two.first(capacity - frame), two.subspan(capacity - frame), second_frame);
  REQUIRE(parser.next() == PageParser::Result::message);
  CHECK_FALSE(parser.reassembled());
  REQUIRE(parser.joined_page());
  CHECK(parser.view().data() == first_frame_data);
  CHECK(std::vector<std::byte>(parser.view().begin(), parser.view().end()) == message);
  const std::weak_ptr<const void> joined = parser.joined_page();
  CHECK(parser.next() == PageParser::Result::need_page);
  CHECK(second_frame.use_count() == 1);  // a page read to its end is let go
  CHECK(joined.expired());               // and so is the joined page after its message
}

TEST_CASE("a reassembly starts in the memory the previous one left as the spare", "[page_format]") {
  // Three messages of 2.5 pages each, in full pages (as over POSIX): each is reassembled.
  const std::size_t page_size = 4096;
  const std::vector<std::vector<std::byte>> messages = {pattern(10000, 1), pattern(10000, 2), pattern(9000, 3)};
  const auto pages = pack(messages, page_size);
  ReassemblySpare spare;
  PageParser parser(4 * page_size, {}, 0, &spare);
  std::vector<const std::byte*> memory;
  std::vector<std::vector<std::byte>> parsed;
  for (const auto& p : pages) {
    parser.set_page(p);
    for (;;) {
      const auto r = parser.next();
      REQUIRE(r != PageParser::Result::error);
      if (r == PageParser::Result::need_page) break;
      REQUIRE(parser.reassembled());
      memory.push_back(parser.view().data());
      parsed.emplace_back(parser.view().begin(), parser.view().end());
      parser.recycle_reassembled();
      CHECK(spare.capacity() >= 10000);
    }
  }
  CHECK(parsed == messages);
  REQUIRE(memory.size() == 3);
  CHECK(memory[1] == memory[0]);  // no allocation after the first
  CHECK(memory[2] == memory[0]);

  SECTION("a kept block far larger than the next message needs is freed, not held on") {
    // A 3,000-byte message that starts 984 bytes before the end of a page: reassembled.
    const auto small = pattern(3000, 5);
    const auto pages_of_small = pack({pattern(page_size - 1000, 6), small}, page_size);
    REQUIRE(pages_of_small.size() == 2);
    std::vector<std::vector<std::byte>> got;
    for (const auto& p : pages_of_small) {
      parser.set_page(p);
      for (auto r = parser.next(); r == PageParser::Result::message; r = parser.next()) {
        got.emplace_back(parser.view().begin(), parser.view().end());
        if (parser.reassembled()) parser.recycle_reassembled();
      }
    }
    REQUIRE(got.size() == 2);
    CHECK(got[1] == small);
    CHECK(spare.capacity() == 3000);  // its own block kept; the 10,000-byte one freed
  }
  SECTION("take_reassembled() hands the memory out; the next reassembly starts afresh") {
    const auto next_pages = pack({pattern(6000, 4)}, page_size);
    parser.set_page(next_pages[0]);
    REQUIRE(parser.next() == PageParser::Result::need_page);
    CHECK(spare.capacity() == 0);  // taken by the reassembly under way
  }
}

TEST_CASE("a message that fits is written whole, its parts one after another", "[page_format]") {
  const auto header = pattern(5, 1), payload = pattern(300, 2);
  const std::span<const std::byte> parts[] = {header, {}, payload};
  std::vector<std::byte> page(400, std::byte{0xee});
  std::size_t used = 10;
  MessagePacker::write_whole(page.data(), used, parts, 305);
  CHECK(used == 10 + 8 + 305);
  CHECK(load_le<std::uint64_t>(page.data() + 10) == 305);
  // Compared part by part: GCC 12 at -O3 warns (falsely) on a vector grown by insert() here.
  CHECK(std::equal(header.begin(), header.end(), page.begin() + 18));
  CHECK(std::equal(payload.begin(), payload.end(), page.begin() + 18 + 5));
  CHECK(page[used] == std::byte{0xee});  // nothing written beyond
}
