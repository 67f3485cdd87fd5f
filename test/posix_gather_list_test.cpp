// SPDX-License-Identifier: MIT
// The POSIX send socket's scatter-gather list: what the next sendmsg() is given.
#include "backends/posix/gather_list.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <vector>

namespace {

using netio::posix::GatherList;

struct Part {
  const std::byte* data;
  std::size_t size;
};

// Adds parts in order until the list says it is full; returns how many were offered.
std::size_t add_all(GatherList& list, const std::vector<Part>& parts) {
  std::size_t offered = 0;
  for (const auto& part : parts) {
    ++offered;
    if (!list.add(part.data, part.size)) break;
  }
  return offered;
}

}  // namespace

TEST_CASE("gather list: frames in order, what was written skipped", "[posix][gather]") {
  std::array<std::byte, 8> header1{}, header2{};
  std::vector<std::byte> payload1(1000), payload2(500);
  std::array<iovec, 8> slots{};

  SECTION("nothing written yet: every part whole") {
    GatherList list(slots, 0, 1 << 20);
    add_all(list, {{header1.data(), 8}, {payload1.data(), 1000}, {header2.data(), 8}, {payload2.data(), 500}});
    REQUIRE(list.count() == 4);
    CHECK(list.bytes() == 1516);
    CHECK(list.data()[0].iov_base == header1.data());
    CHECK(list.data()[3].iov_base == payload2.data());
    CHECK(list.data()[3].iov_len == 500);
    CHECK_FALSE(list.full());
  }
  SECTION("the header and part of the payload written: the rest of the payload first") {
    GatherList list(slots, 8 + 300, 1 << 20);
    add_all(list, {{header1.data(), 8}, {payload1.data(), 1000}, {header2.data(), 8}, {payload2.data(), 500}});
    REQUIRE(list.count() == 3);
    CHECK(list.data()[0].iov_base == payload1.data() + 300);
    CHECK(list.data()[0].iov_len == 700);
    CHECK(list.bytes() == 700 + 8 + 500);
  }
  SECTION("a skip that ends exactly at a part boundary") {
    GatherList list(slots, 8 + 1000, 1 << 20);
    add_all(list, {{header1.data(), 8}, {payload1.data(), 1000}, {header2.data(), 8}, {payload2.data(), 500}});
    REQUIRE(list.count() == 2);
    CHECK(list.data()[0].iov_base == header2.data());
  }
}

TEST_CASE("gather list: the byte budget cuts a part and ends the list", "[posix][gather]") {
  std::array<std::byte, 8> header{};
  std::vector<std::byte> payload(3 << 20);  // a frame several times the budget
  std::array<iovec, 8> slots{};
  const std::size_t budget = 768 * 1024;

  GatherList first(slots, 0, budget);
  const std::size_t offered =
      add_all(first, {{header.data(), 8}, {payload.data(), payload.size()}, {header.data(), 8}});
  CHECK(offered == 2);  // full after the payload: the next frame's header is not offered
  CHECK(first.full());
  REQUIRE(first.count() == 2);
  CHECK(first.bytes() == budget);
  CHECK(first.data()[1].iov_len == budget - 8);

  // The next call picks up where the first stopped, within the budget again.
  GatherList second(slots, budget, budget);
  add_all(second, {{header.data(), 8}, {payload.data(), payload.size()}});
  REQUIRE(second.count() == 1);
  CHECK(second.data()[0].iov_base == payload.data() + (budget - 8));
  CHECK(second.bytes() == budget);

  // Every byte of the frame is offered exactly once over successive calls.
  std::size_t written = 0, calls = 0;
  while (written < 8 + payload.size()) {
    GatherList list(slots, written, budget);
    add_all(list, {{header.data(), 8}, {payload.data(), payload.size()}});
    REQUIRE(list.bytes() > 0);
    CHECK(list.bytes() <= budget);
    written += list.bytes();
    ++calls;
  }
  CHECK(written == 8 + payload.size());
  CHECK(calls == (8 + payload.size() + budget - 1) / budget);
}

TEST_CASE("gather list: the iovec count ends the list, empty parts take no iovec", "[posix][gather]") {
  std::array<std::byte, 8> header{};
  std::array<iovec, 3> slots{};
  GatherList list(slots, 0, 1 << 20);
  CHECK(list.add(header.data(), 8));
  CHECK(list.add(nullptr, 0));  // an empty payload: nothing to send, no iovec
  CHECK(list.add(header.data(), 8));
  CHECK_FALSE(list.add(header.data(), 8));  // the third iovec fills the list
  CHECK_FALSE(list.add(header.data(), 8));  // and it stays full
  CHECK(list.count() == 3);
  CHECK(list.bytes() == 24);
}
