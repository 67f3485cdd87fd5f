// SPDX-License-Identifier: MIT
// High-throughput pages as a hostile sender may shape them (page_format.hpp): lengths that
// lie, pages cut anywhere, messages spanning pages, joined in spare room or reassembled.
// Mode 0 parses arbitrary pages and checks that nothing is delivered that was not received;
// mode 1 packs fuzzed messages with MessagePacker into pages of a fuzzed size and checks
// that the parser gives back exactly those messages.
#include "page_format.hpp"

#include "fuzz_check.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace {

constexpr std::size_t max_message = 4 << 20;

// A received page as the back-ends hand it over: its bytes and spare room behind them.
struct Page {
  std::vector<std::byte> buffer;
  std::size_t used = 0;
};

void parse_arbitrary(FuzzedDataProvider& in) {
  netio::detail::PageParser parser(in.ConsumeIntegralInRange<std::size_t>(0, max_message));
  std::size_t received = 0;
  std::size_t delivered = 0;
  std::vector<std::shared_ptr<const void>> held;  // keeps joined pages alive, as a receive socket does
  while (in.remaining_bytes() > 0) {
    auto page = std::make_shared<Page>();
    const auto bytes = in.ConsumeBytes<std::uint8_t>(in.ConsumeIntegralInRange<std::size_t>(0, 70000));
    const std::size_t spare = in.ConsumeIntegralInRange<std::size_t>(0, 70000);
    page->used = bytes.size();
    page->buffer.resize(bytes.size() + spare);
    if (!bytes.empty()) std::memcpy(page->buffer.data(), bytes.data(), bytes.size());
    received += bytes.size();
    parser.set_page(std::span<const std::byte>(page->buffer.data(), page->used),
                    std::span<std::byte>(page->buffer.data() + page->used, spare), page);
    for (;;) {
      const auto result = parser.next();
      if (result == netio::detail::PageParser::Result::error) {
        FUZZ_CHECK(!parser.error().empty());
        return;
      }
      if (result == netio::detail::PageParser::Result::need_page) break;
      const auto view = parser.view();
      delivered += view.size();
      FUZZ_CHECK(delivered <= received);
      // Every byte of the view must be readable (ASan checks the reads; the sum keeps them).
      unsigned sum = 0;
      for (const auto b : view) sum += std::to_integer<unsigned>(b);
      asm volatile("" : : "r"(sum));
      if (parser.reassembled()) FUZZ_CHECK(parser.take_reassembled().size() == view.size());
      if (parser.joined_page()) held.push_back(parser.joined_page());
    }
  }
}

void round_trip(FuzzedDataProvider& in) {
  const std::size_t page_size = in.ConsumeIntegralInRange<std::size_t>(netio::detail::message_header_size, 4096);
  std::vector<std::vector<std::byte>> messages;
  while (in.remaining_bytes() > 0 && messages.size() < 64) {
    const auto bytes = in.ConsumeBytes<std::uint8_t>(in.ConsumeIntegralInRange<std::size_t>(0, 3 * page_size));
    messages.emplace_back(reinterpret_cast<const std::byte*>(bytes.data()),
                          reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size());
  }
  std::vector<std::vector<std::byte>> pages;
  std::vector<std::byte> page(page_size);
  std::size_t used = 0;
  for (const auto& message : messages) {
    netio::detail::MessagePacker packer(message);
    while (!packer.done()) {
      packer.fill(page.data(), used, page_size);
      if (!packer.done() || netio::detail::MessagePacker::page_full(used, page_size)) {
        pages.emplace_back(page.begin(), page.begin() + static_cast<std::ptrdiff_t>(used));
        used = 0;
      }
    }
  }
  if (used > 0) pages.emplace_back(page.begin(), page.begin() + static_cast<std::ptrdiff_t>(used));

  netio::detail::PageParser parser(max_message);
  std::size_t next = 0;
  for (const auto& p : pages) {
    parser.set_page(p);
    for (;;) {
      const auto result = parser.next();
      FUZZ_CHECK(result != netio::detail::PageParser::Result::error);
      if (result == netio::detail::PageParser::Result::need_page) break;
      FUZZ_CHECK(next < messages.size());
      const auto view = parser.view();
      FUZZ_CHECK(view.size() == messages[next].size());
      FUZZ_CHECK(view.empty() || std::memcmp(view.data(), messages[next].data(), view.size()) == 0);
      ++next;
    }
  }
  FUZZ_CHECK(next == messages.size());
  FUZZ_CHECK(!parser.mid_message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    round_trip(in);
  } else {
    parse_arbitrary(in);
  }
  return 0;
}
