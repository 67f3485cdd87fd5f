// SPDX-License-Identifier: MIT
// What a shm:// peer controls (backends/shm/): the segment message on the Unix socket
// (segment_passing.hpp), the segment's header checked at attach (segment.hpp), and the
// rings' shared indices and entry headers (ring.hpp), which the other process may rewrite
// at any time. The first byte picks the part; the rest is the peer's bytes.
//   0: the bytes arrive on the socket as the segment message, without a descriptor: never
//      a segment.
//   1: a header and a size for a memfd, sealed or not: what attaches fits the limits and
//      the file.
//   2: a ring whose control and bytes are the input's, read and written through a sequence
//      of the peer's moves: every entry handed out lies inside the ring, within the largest
//      payload and what was produced; neither side reads or writes outside the ring (ASan),
//      and a reference entry resolves only inside the sender's area.
#include "backends/shm/ring.hpp"
#include "backends/shm/segment.hpp"
#include "backends/shm/segment_passing.hpp"
#include "backends/shm/send_area.hpp"

#include "fuzz_check.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

namespace shm = netio::shm;

// Takes fixed-size values from the front of the input; zeros once it runs out.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  T take() {
    T value{};
    const std::size_t n = std::min(sizeof value, bytes_.size());
    std::memcpy(&value, bytes_.data(), n);
    bytes_ = bytes_.subspan(n);
    return value;
  }
  std::span<const std::uint8_t> take_bytes(std::size_t count) {
    const auto taken = bytes_.first(std::min(count, bytes_.size()));
    bytes_ = bytes_.subspan(taken.size());
    return taken;
  }
  bool empty() const noexcept { return bytes_.empty(); }
  std::span<const std::uint8_t> rest() const noexcept { return bytes_; }

 private:
  std::span<const std::uint8_t> bytes_;
};

void segment_message(std::span<const std::uint8_t> bytes) {
  int pair[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) == 0);
  const netio::posix::SocketFd ours(pair[0]);
  netio::posix::SocketFd theirs(pair[1]);
  const std::size_t length = std::min<std::size_t>(bytes.size(), 4096);
  if (length != 0) FUZZ_CHECK(::send(theirs.get(), bytes.data(), length, MSG_NOSIGNAL) == static_cast<ssize_t>(length));
  if (bytes.size() % 2 == 1) theirs.reset();  // and sometimes the peer is gone after them
  for (int i = 0; i < 4; ++i) {
    auto received = shm::receive_segment(ours.get());
    FUZZ_CHECK(received.status != shm::ReceivedSegment::Status::received);
    FUZZ_CHECK(received.fd.get() < 0);
    if (received.status == shm::ReceivedSegment::Status::failed) FUZZ_CHECK(!received.why.empty());
    if (received.status != shm::ReceivedSegment::Status::failed) break;
  }
}

void segment_header(Reader& in) {
  const auto header = in.take<shm::SegmentHeader>();
  const auto flags = in.take<std::uint8_t>();
  // Up to 64 KiB of rings: what the limits and sizes do, not how large a file can get.
  const std::size_t size = shm::data_offset - 64 + in.take<std::uint16_t>() % (64 * 1024 + 128);
  const std::size_t max_data = in.take<std::uint16_t>();
  const std::size_t max_reply = in.take<std::uint16_t>();
  netio::posix::SocketFd fd(::memfd_create("netio-fuzz-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  FUZZ_CHECK(fd.get() >= 0);
  FUZZ_CHECK(::ftruncate(fd.get(), static_cast<off_t>(size)) == 0);
  FUZZ_CHECK(::pwrite(fd.get(), &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header));
  unsigned seals = 0;
  if (flags & 1) seals |= F_SEAL_SHRINK;
  if (flags & 2) seals |= F_SEAL_GROW;
  if (flags & 4) seals |= F_SEAL_SEAL;
  if (seals != 0) FUZZ_CHECK(::fcntl(fd.get(), F_ADD_SEALS, seals) == 0);
  std::string why;
  const auto segment = shm::Segment::attach(std::move(fd), max_data, max_reply, why);
  if (!segment) {
    FUZZ_CHECK(!why.empty());
    return;
  }
  FUZZ_CHECK(seals == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
  FUZZ_CHECK(segment->data_capacity() > 0 && segment->data_capacity() <= max_data);
  FUZZ_CHECK(segment->reply_capacity() <= max_reply);
  FUZZ_CHECK(segment->data_capacity() % 64 == 0 && segment->reply_capacity() % 64 == 0);
  FUZZ_CHECK(shm::data_offset + segment->data_capacity() + segment->reply_capacity() == segment->size());
  FUZZ_CHECK(segment->size() == size);
  // Every byte of both rings is in the mapping.
  volatile std::byte last = segment->reply_ring()[-1];
  (void)last;
  if (segment->reply_capacity() != 0) segment->reply_ring()[segment->reply_capacity() - 1] = std::byte{1};
}

void ring(Reader& in) {
  const std::size_t capacity = 64 * (2 + in.take<std::uint8_t>() % 31);  // 128 B .. 2 KiB
  const std::size_t max_payload = in.take<std::uint16_t>() % (capacity + 64);
  // The ring's bytes as the peer left them, in a buffer of their own (ASan sees any byte
  // read or written past its end).
  std::vector<std::byte> bytes(capacity);
  const auto initial = in.take_bytes(capacity);
  std::memcpy(bytes.data(), initial.data(), initial.size());
  auto* control = new (std::align_val_t{64}) shm::RingControl{};
  shm::RingConsumer consumer(control, bytes.data(), capacity, max_payload);
  shm::RingProducer producer(control, bytes.data(), capacity);
  std::uint64_t max_head = 0;  // the furthest head anyone published
  std::string consumer_corrupt;
  std::string producer_corrupt;
  while (!in.empty() && consumer_corrupt.empty()) {
    const auto move = in.take<std::uint8_t>();
    switch (move % 5) {
      case 0:  // the peer publishes a head (any value)
        control->head.store(in.take<std::uint64_t>());
        max_head = std::max<std::uint64_t>(max_head, control->head.load());
        break;
      case 1:  // the peer advances the head a little
        control->head.store(control->head.load() + in.take<std::uint16_t>() % (2 * capacity));
        max_head = std::max<std::uint64_t>(max_head, control->head.load());
        break;
      case 2: {  // the peer rewrites ring bytes (an entry's length, say)
        const std::size_t at = in.take<std::uint16_t>() % capacity;
        const auto value = in.take<std::uint64_t>();
        std::memcpy(bytes.data() + at, &value, std::min<std::size_t>(sizeof value, capacity - at));
        break;
      }
      case 3: {  // we read, and give back what we read
        const auto entry = consumer.next(consumer_corrupt);
        if (entry.end == 0) break;
        FUZZ_CHECK(consumer_corrupt.empty());
        FUZZ_CHECK(entry.payload.size() <= max_payload);
        FUZZ_CHECK(entry.payload.data() >= bytes.data() + shm::entry_header_size);
        FUZZ_CHECK(entry.payload.data() + entry.payload.size() <= bytes.data() + capacity);
        FUZZ_CHECK(entry.end <= max_head);
        for (const std::byte b : entry.payload) (void)static_cast<volatile std::byte>(b);
        FUZZ_CHECK(entry.kind == shm::EntryKind::bytes || entry.kind == shm::EntryKind::area_reference);
        if (entry.kind == shm::EntryKind::area_reference && entry.payload.size() == shm::reference_payload_size) {
          // What a reference names is resolved only inside the sender's area.
          static const auto area = shm::SendArea::create(64 * 1024);
          shm::AreaReference reference{};
          std::memcpy(&reference, entry.payload.data(), sizeof reference);
          const auto base = area->resolve({0, 0})->data();
          if (const auto named = area->resolve(reference)) {
            FUZZ_CHECK(named->data() >= base && named->data() + named->size() <= base + area->capacity());
            for (const std::byte b : *named) (void)static_cast<volatile std::byte>(b);
          }
        }
        if (move & 0x80) consumer.free_to(entry.end);
        break;
      }
      case 4: {  // a producer whose consumer's tail is the peer's
        if (!producer_corrupt.empty()) break;
        control->tail.store(in.take<std::uint64_t>() % (producer.head() + 2));
        const std::size_t payload = in.take<std::uint8_t>() % (capacity / 2 - shm::entry_header_size + 1);
        const std::vector<std::byte> message(payload, std::byte{0x5a});
        const std::uint64_t before = producer.head();
        if (producer.push(message, producer_corrupt)) FUZZ_CHECK(producer.head() > before);
        max_head = std::max<std::uint64_t>(max_head, producer.head());
        break;
      }
    }
  }
  ::operator delete (control, std::align_val_t{64});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in({data, size});
  switch (in.take<std::uint8_t>() % 3) {
    case 0: segment_message(in.rest()); break;
    case 1: segment_header(in); break;
    case 2: ring(in); break;
  }
  return 0;
}
