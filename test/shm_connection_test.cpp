// SPDX-License-Identifier: MIT
// One end of a shm:// connection (backends/shm/shm_connection.hpp) against a ring this test
// consumes by hand: what the sockets' suites over shm:// hit only by chance of timing.
#include "backends/shm/shm_connection.hpp"
#include "backends/posix/socket_fd.hpp"
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/send_area.hpp"
#include "netio/context.hpp"
#include "support/transports.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <optional>
#include <vector>

namespace {

using netio::Buffer;
using netio::shm::RingConsumer;
using netio::shm::RingProducer;
using netio::shm::Segment;
using netio::shm::SendArea;
using netio::shm::ShmConnection;

}  // namespace

// Seen as a rare stall of "large messages go out from the caller's memory" under ASan: the
// ring filled with copied frames, then the flushed page (a reference) found no room, and
// with no other page in flight the sender slept without its waiting flag set, so the
// receiver freeing the ring never woke it.
TEST_CASE("shm connection: a page the full ring has no room for waits for room, and goes once woken", "[shm]") {
  netio::Context context;
  auto& loop = context.loop();
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  netio::posix::SocketFd receiver_end(fds[1]);
  const auto segment = Segment::create(64 * 1024, 0);
  const RingProducer producer(&segment->data_control(), segment->data_ring(), segment->data_capacity());
  RingConsumer consumer(&segment->data_control(), segment->data_ring(), segment->data_capacity(), 32 * 1024);
  const auto area = SendArea::create(1 << 20);

  std::optional<ShmConnection> connection;
  std::vector<Buffer*> written;   // loop thread
  std::vector<Buffer*> in_place;  // loop thread
  // Two copies of 32 KiB less an entry's header fill the 64 KiB ring exactly, each fitting
  // when pushed: no wait announced.
  constexpr std::size_t copy_size = 32 * 1024 - 16;
  std::vector<std::byte> copied(2 * copy_size, std::byte{1});
  Buffer first{copied.data(), copy_size, copy_size, nullptr, nullptr};
  Buffer second{copied.data() + copy_size, copy_size, copy_size, nullptr, nullptr};
  // A page of the send area, large enough to go by reference, within the ring's size (the
  // receiver's window, which a connection's ring always is).
  constexpr std::size_t page_size = 32 * 1024;
  Buffer page{area->allocate(page_size), page_size, page_size, nullptr, nullptr};
  REQUIRE(page.data != nullptr);
  loop.run_sync([&] {
    connection.emplace(loop, netio::posix::SocketFd(fds[0]), segment, producer, std::nullopt, 0, "to the test");
    connection->use_send_area(area);
    ShmConnection::Callbacks callbacks;
    callbacks.on_written = [&](Buffer* buffer) { written.push_back(buffer); };
    callbacks.on_sent_in_place = [&](Buffer* buffer) { in_place.push_back(buffer); };
    connection->start(std::move(callbacks));
    connection->send(&first);
    connection->send(&second);
    connection->send(&page);
  });
  loop.run_sync([&] {
    CHECK(written.size() == 2);
    CHECK(in_place.empty());
  });

  std::string corrupt;
  std::uint64_t end = 0;
  for (int i = 0; i < 2; ++i) {
    const auto entry = consumer.next(corrupt);
    REQUIRE(entry.end != 0);
    end = entry.end;
  }
  REQUIRE(corrupt.empty());
  consumer.free_to(end);
  // The sender said it sleeps until room comes: the freeing side wakes it (ShmConnection
  // writes a byte to the socket when it finds the flag).
  REQUIRE(consumer.producer_needs_wake());
  const char wake = 1;
  REQUIRE(::send(receiver_end.get(), &wake, 1, MSG_NOSIGNAL) == 1);
  CHECK(netio::test::eventually([&] {
    bool sent = false;
    loop.run_sync([&] { sent = in_place.size() == 1 && in_place.front() == &page; });
    return sent;
  }));
  const auto entry = consumer.next(corrupt);
  CHECK(corrupt.empty());
  CHECK(entry.kind == netio::shm::EntryKind::area_reference);
  loop.run_sync([&] { connection.reset(); });
  area->deallocate(page.data, page_size);
}
