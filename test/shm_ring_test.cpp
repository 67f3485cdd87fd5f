// SPDX-License-Identifier: MIT
// The shared-memory ring of shm:// (backends/shm/ring.hpp) and its segment, one process
// playing both ends: entries in order and in place, wrapping, freeing in order, the
// waiting flags, and every index or length a peer could write checked before use.
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/send_area.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using netio::shm::RingConsumer;
using netio::shm::RingProducer;
using netio::shm::Segment;

std::vector<std::byte> bytes_of(std::size_t size, int seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<std::byte>((i * 7 + static_cast<std::size_t>(seed)) & 0xff);
  return bytes;
}

struct Ring {
  std::shared_ptr<Segment> segment = Segment::create(8192, 0);
  RingProducer producer{&segment->data_control(), segment->data_ring(), segment->data_capacity()};
  RingConsumer consumer{&segment->data_control(), segment->data_ring(), segment->data_capacity(), 3000};
  std::string error;
};

}  // namespace

TEST_CASE("shm ring: entries arrive whole, in order, in place, and wrap without crossing the end", "[shm]") {
  Ring ring;
  std::uint64_t freed = 0;
  for (int i = 0; i < 100; ++i) {
    const auto message = bytes_of(static_cast<std::size_t>(100 + i * 29), i);
    REQUIRE(ring.producer.push(message, ring.error));
    const auto entry = ring.consumer.next(ring.error);
    REQUIRE(ring.error.empty());
    REQUIRE(entry.end != 0);
    CHECK(entry.payload.data() >= ring.segment->data_ring());
    CHECK(entry.payload.data() + entry.payload.size() <= ring.segment->data_ring() + ring.segment->data_capacity());
    CHECK(std::equal(entry.payload.begin(), entry.payload.end(), message.begin(), message.end()));
    CHECK(entry.end > freed);
    freed = entry.end;
    ring.consumer.free_to(entry.end);
  }
  CHECK(ring.consumer.next(ring.error).end == 0);
  CHECK(ring.error.empty());
}

TEST_CASE("shm ring: a full ring refuses until the consumer frees, and the waiting flags wake", "[shm]") {
  Ring ring;
  const auto message = bytes_of(2000, 1);
  int pushed = 0;
  while (ring.producer.push(message, ring.error)) ++pushed;
  REQUIRE(ring.error.empty());
  CHECK(pushed == 4);                                               // 8192 bytes of 2048-byte entries
  CHECK(ring.producer.wait_for_space(message.size(), ring.error));  // sleeps
  const auto first = ring.consumer.next(ring.error);
  REQUIRE(first.end != 0);
  ring.consumer.free_to(first.end);
  CHECK(ring.consumer.producer_needs_wake());
  CHECK_FALSE(ring.consumer.producer_needs_wake());  // once
  CHECK(ring.producer.push(message, ring.error));
  // The consumer drains and sleeps; the producer's next push finds it asleep, once.
  while (ring.consumer.next(ring.error).end != 0) {
  }
  ring.consumer.free_to(ring.consumer.read_index());
  CHECK(ring.consumer.wait_for_data(ring.error));
  REQUIRE(ring.producer.push(message, ring.error));
  CHECK(ring.producer.consumer_needs_wake());
  CHECK_FALSE(ring.producer.consumer_needs_wake());
  // Data that came between the look and the flag: the consumer does not sleep.
  CHECK_FALSE(ring.consumer.wait_for_data(ring.error));
}

TEST_CASE("shm ring: a corrupt head, tail, length or pad is reported, never followed", "[shm]") {
  Ring ring;
  auto& control = ring.segment->data_control();
  const auto message = bytes_of(500, 3);
  REQUIRE(ring.producer.push(message, ring.error));
  SECTION("a head beyond the ring") {
    control.head.store(1ull << 40);
    (void)ring.consumer.next(ring.error);
    CHECK_THAT(ring.error, Catch::Contains("beyond the 8192-byte ring"));
  }
  SECTION("a head that moves back") {
    REQUIRE(ring.consumer.next(ring.error).end != 0);
    control.head.store(0);
    (void)ring.consumer.next(ring.error);
    CHECK_THAT(ring.error, Catch::Contains("head moved from"));
  }
  SECTION("a length larger than the consumer takes") {
    const std::uint64_t junk = 3001;
    std::memcpy(ring.segment->data_ring(), &junk, sizeof junk);
    CHECK(ring.consumer.next(ring.error).end == 0);
    CHECK_THAT(ring.error, Catch::Contains("an entry of 3001 bytes"));
  }
  SECTION("a length past what was produced") {
    const std::uint64_t junk = 2000;
    std::memcpy(ring.segment->data_ring(), &junk, sizeof junk);
    CHECK(ring.consumer.next(ring.error).end == 0);
    CHECK_THAT(ring.error, Catch::Contains("an entry of 2000 bytes"));
  }
  SECTION("a pad where the ring does not end") {
    const std::uint64_t pad = netio::shm::pad_marker;
    std::memcpy(ring.segment->data_ring(), &pad, sizeof pad);
    CHECK(ring.consumer.next(ring.error).end == 0);
    CHECK_THAT(ring.error, Catch::Contains("a pad at 0 runs past"));
  }
  SECTION("an entry of an unknown kind") {
    const std::uint64_t junk = 7;
    std::memcpy(ring.segment->data_ring() + 8, &junk, sizeof junk);
    CHECK(ring.consumer.next(ring.error).end == 0);
    CHECK_THAT(ring.error, Catch::Contains("of unknown kind 7"));
  }
  SECTION("a tail beyond the head") {
    while (ring.producer.push(message, ring.error)) {
    }
    REQUIRE(ring.error.empty());
    control.tail.store(1ull << 40);
    CHECK_FALSE(ring.producer.push(message, ring.error));
    CHECK_THAT(ring.error, Catch::Contains("outside what was produced"));
  }
}

TEST_CASE("shm ring: an entry keeps its kind, and the producer learns what was freed", "[shm]") {
  Ring ring;
  const auto message = bytes_of(16, 5);
  REQUIRE(ring.producer.push(message, ring.error, netio::shm::EntryKind::area_reference));
  REQUIRE(ring.producer.push(message, ring.error));
  const auto first = ring.consumer.next(ring.error);
  const auto second = ring.consumer.next(ring.error);
  REQUIRE(ring.error.empty());
  CHECK(first.kind == netio::shm::EntryKind::area_reference);
  CHECK(second.kind == netio::shm::EntryKind::bytes);
  CHECK(ring.producer.freed(ring.error) == 0);
  // Asleep until the first is freed: the consumer's free finds the flag and clears it.
  CHECK(ring.producer.wait_for_free(first.end, ring.error));
  ring.consumer.free_to(first.end);
  CHECK(ring.consumer.producer_needs_wake());
  CHECK(ring.producer.freed(ring.error) == first.end);
  // Freed meanwhile: no sleep, the flag withdrawn.
  CHECK_FALSE(ring.producer.wait_for_free(first.end, ring.error));
  CHECK_FALSE(ring.consumer.producer_needs_wake());
  CHECK(ring.error.empty());
}

TEST_CASE("shm send area: buffers inside it, references checked both ways, memory reused", "[shm]") {
  using netio::shm::SendArea;
  const auto area = SendArea::create(16 * 4096);
  std::byte* a = area->allocate(4 * 4096);
  std::byte* b = area->allocate(4 * 4096);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(b - a == 4 * 4096);
  CHECK(area->allocate(9 * 4096) == nullptr);  // 8 pages left
  // Given back, joined with its free neighbour, and taken again first.
  std::byte* c = area->allocate(8 * 4096);
  REQUIRE(c != nullptr);
  area->deallocate(b, 4 * 4096);
  area->deallocate(c, 8 * 4096);
  CHECK(area->allocate(12 * 4096) == b);

  const auto reference = area->reference_to(std::span<const std::byte>(a + 100, 200));
  REQUIRE(reference);
  CHECK(reference->offset == static_cast<std::uint64_t>(a - area->resolve({0, 0})->data()) + 100);
  CHECK(reference->length == 200);
  CHECK(area->resolve(*reference)->data() == a + 100);
  std::vector<std::byte> elsewhere(100);
  CHECK_FALSE(area->reference_to(elsewhere));
  CHECK_FALSE(area->reference_to(std::span<const std::byte>(a, 17 * 4096)));
  // What a peer names is checked against the area, overflow included.
  CHECK_FALSE(area->resolve({16 * 4096 - 10, 11}));
  CHECK_FALSE(area->resolve({~std::uint64_t{0} - 5, 10}));
  CHECK_FALSE(area->resolve({1ull << 40, 1}));
  CHECK(area->resolve({16 * 4096 - 10, 10}));
}

TEST_CASE("shm send area: attach takes only a sealed area no larger than the limit", "[shm]") {
  using netio::shm::SendArea;
  std::string why;
  const auto area = SendArea::create(8 * 4096);
  SECTION("a good one, seen from the other side") {
    const auto attached = SendArea::attach(netio::posix::SocketFd(::dup(area->fd())), 8 * 4096, why);
    REQUIRE(attached);
    std::byte* page = area->allocate(4096);
    page[10] = std::byte{99};
    const auto reference = area->reference_to(std::span<const std::byte>(page, 4096));
    CHECK((*attached->resolve(*reference))[10] == std::byte{99});
  }
  SECTION("larger than the limit") {
    CHECK_FALSE(SendArea::attach(netio::posix::SocketFd(::dup(area->fd())), 4 * 4096, why));
    CHECK_THAT(why, Catch::Contains("has 32768 bytes"));
  }
  SECTION("unsealed") {
    netio::posix::SocketFd unsealed(::memfd_create("junk", MFD_CLOEXEC));
    REQUIRE(::ftruncate(unsealed.get(), 4096) == 0);
    CHECK_FALSE(SendArea::attach(std::move(unsealed), SIZE_MAX, why));
    CHECK_THAT(why, Catch::Contains("not sealed"));
  }
}

TEST_CASE("shm segment: attach takes only a sealed segment whose header fits what was agreed", "[shm]") {
  const auto segment = Segment::create(8192, 4096);
  std::string why;
  SECTION("a good one") {
    auto attached = Segment::attach(netio::posix::SocketFd(::dup(segment->fd())), 8192, 4096, why);
    REQUIRE(attached);
    CHECK(attached->data_capacity() == 8192);
    CHECK(attached->reply_capacity() == 4096);
  }
  SECTION("rings larger than agreed") {
    CHECK_FALSE(Segment::attach(netio::posix::SocketFd(::dup(segment->fd())), 4096, 4096, why));
    CHECK_THAT(why, Catch::Contains("does not describe a netio segment"));
  }
  SECTION("a header that lies about the sizes") {
    auto* header = reinterpret_cast<netio::shm::SegmentHeader*>(segment->data_ring() - netio::shm::data_offset);
    header->data_capacity = 1ull << 40;
    CHECK_FALSE(Segment::attach(netio::posix::SocketFd(::dup(segment->fd())), SIZE_MAX, SIZE_MAX, why));
    CHECK_THAT(why, Catch::Contains("does not describe a netio segment"));
  }
  SECTION("an unsealed memfd (its creator could shrink it under the mapping)") {
    netio::posix::SocketFd unsealed(::memfd_create("junk", MFD_CLOEXEC));
    REQUIRE(::ftruncate(unsealed.get(), 3 * 4096) == 0);
    CHECK_FALSE(Segment::attach(std::move(unsealed), SIZE_MAX, SIZE_MAX, why));
    CHECK_THAT(why, Catch::Contains("not sealed"));
  }
}

TEST_CASE("shm ring: capacities hold two of the largest entries, and the limit bounds the rest", "[shm]") {
  using netio::shm::ring_capacity;
  CHECK(ring_capacity(1 << 20, 1, 8 << 20) >= 2 * netio::shm::entry_size(1 << 20));
  CHECK(ring_capacity(1 << 20, 100, 8 << 20) == (8 << 20));
  CHECK(ring_capacity(100, 10, 8 << 20) == 4096);
  const auto two_large = 2 * netio::shm::entry_size(64 << 20);
  CHECK(ring_capacity(64 << 20, 4, 8 << 20) >= two_large);
  CHECK(ring_capacity(64 << 20, 4, 8 << 20) < two_large + 4096);
}
