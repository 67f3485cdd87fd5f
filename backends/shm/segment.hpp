// SPDX-License-Identifier: MIT
// The shared segment of one shm:// connection: an anonymous memory file (memfd) that the
// listening side creates, sizes and seals (no peer can grow or shrink it under a mapping,
// which would turn a read into SIGBUS), and passes to the connector with SCM_RIGHTS right
// after the handshake's accept. It holds two single-producer/single-consumer rings
// (ring.hpp): data from the connector to the listener, replies the other way.
//
//   offset 0                 SegmentHeader (one page): magic, version, the two rings' sizes
//   data_control_offset      RingControl of the data ring (its own cache lines)
//   reply_control_offset     RingControl of the reply ring
//   data_offset              the data ring's bytes (data_capacity)
//   data_offset + data_cap.  the reply ring's bytes (reply_capacity; 0: no replies)
//
// Nothing is ever named: the memfd lives as long as a descriptor or a mapping of it, so a
// crash on either side leaves nothing in /dev/shm or the file system.
//
// Segment is immutable once made (the mapping lives as long as the object); any thread.
// What the other process writes into the mapping is never trusted: the header is read once,
// checked and copied at attach(), and the rings check every index they read.
#pragma once

#include "backends/posix/socket_fd.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace netio::shm {

// One ring's shared indices. Each side writes only its own fields; the other side's are
// read and checked (RingProducer, RingConsumer).
struct alignas(64) RingControl {
  alignas(64) std::atomic<std::uint64_t> head;  // bytes produced (producer writes)
  std::atomic<std::uint32_t> producer_waiting;  // producer sleeps until space frees (producer sets)
  alignas(64) std::atomic<std::uint64_t> tail;  // bytes freed (consumer writes)
  std::atomic<std::uint64_t> delivered;         // bytes taken, for the end of a stream (consumer)
  std::atomic<std::uint32_t> consumer_waiting;  // consumer sleeps until data comes (consumer sets)
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "shared-memory indices need address-free atomics");

struct SegmentHeader {
  std::uint64_t magic;
  std::uint64_t version;
  std::uint64_t data_capacity;
  std::uint64_t reply_capacity;
};

constexpr std::uint64_t segment_magic = 0x314d48534f49544eull;  // "NETIOSHM1"-ish, little-endian
constexpr std::uint64_t segment_version = 1;
// The unit memory is mapped and backed in (the rings start on one).
constexpr std::size_t page_size = 4096;
constexpr std::size_t data_control_offset = page_size;
constexpr std::size_t reply_control_offset = data_control_offset + sizeof(RingControl);
constexpr std::size_t data_offset = 2 * page_size;

class Segment {
 public:
  // A fresh, sealed segment with rings of these capacities (multiples of 64). Throws Error.
  static std::shared_ptr<Segment> create(std::size_t data_capacity, std::size_t reply_capacity);
  // Maps a segment the peer passed: its size, seals and header must be as `expected_*`
  // allows (the data ring at most expected_data_capacity, the reply ring exactly what the
  // connector asked for, or less). Returns nullptr and sets `why` otherwise.
  static std::shared_ptr<Segment> attach(posix::SocketFd fd, std::size_t max_data_capacity,
                                         std::size_t max_reply_capacity, std::string& why);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  int fd() const noexcept { return fd_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::size_t data_capacity() const noexcept { return data_capacity_; }
  std::size_t reply_capacity() const noexcept { return reply_capacity_; }
  RingControl& data_control() const noexcept { return *reinterpret_cast<RingControl*>(base_ + data_control_offset); }
  RingControl& reply_control() const noexcept { return *reinterpret_cast<RingControl*>(base_ + reply_control_offset); }
  std::byte* data_ring() const noexcept { return base_ + data_offset; }
  std::byte* reply_ring() const noexcept { return base_ + data_offset + data_capacity_; }
  // The descriptor can be dropped once mapped (the mapping keeps the memory).
  void close_fd() noexcept { fd_.reset(); }

 private:
  Segment(posix::SocketFd fd, std::byte* base, std::size_t size, std::size_t data_capacity, std::size_t reply_capacity)
      : fd_(std::move(fd)), base_(base), size_(size), data_capacity_(data_capacity), reply_capacity_(reply_capacity) {}

  posix::SocketFd fd_;
  std::byte* base_;
  std::size_t size_;
  std::size_t data_capacity_;
  std::size_t reply_capacity_;
};

// The capacity of a ring that holds entries of up to `max_entry` payload bytes, `count` of
// them when `limit` bytes allow: at least two (one may wrap), whatever the limit.
std::size_t ring_capacity(std::size_t max_entry, std::size_t count, std::size_t limit);
// The limits: the data ring bounded by the receiver's buffers (credits x the largest) and
// at most this; the reply ring this large (two of the largest replies at least). Replies
// complete once copied into the ring, so it is what a TCP socket's send buffer is to them:
// the receiver's reply window counts the ones waiting behind a full ring, and a small ring
// would refuse replies a TCP connection takes. Its pages are touched only as far as replies
// pile up (an empty ring starts again at its beginning).
constexpr std::size_t data_ring_limit = 8 << 20;
constexpr std::size_t reply_ring_limit = 1 << 20;

}  // namespace netio::shm
