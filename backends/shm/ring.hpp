// SPDX-License-Identifier: MIT
// A single-producer/single-consumer ring of variable-sized entries in shared memory, one
// process on each end (segment.hpp). Indices count bytes since the start and only grow:
// head (produced) is the producer's, tail (freed) the consumer's; position = index %
// capacity. An entry is a 16-byte header (u64 payload length, u64 EntryKind) and the payload, padded to
// 64 bytes, always contiguous: an entry that would cross the end is preceded by a pad
// marker, and starts again at position 0. So the consumer can lend a payload in place
// (the receiver parses it where the sender wrote it) and free entries out of the order it
// consumed them only in the order they were written (tail moves over returned ones).
//
// Publication: the producer writes the payload, then head; the consumer reads head, then
// the payload. Freeing: tail after the consumer is done; the producer reads tail before
// reusing the bytes.
//
// Sleeping without lost wake-ups: a side that finds nothing to do sets its *_waiting flag,
// looks once more, and only then sleeps; the other side, after publishing, reads the flag
// and, when set, clears it and wakes the sleeper (through the connection's socket,
// ShmConnection). Indices and flags are all sequentially consistent, which orders a flag
// set against an index published on the other side (what a fence would, which TSan does
// not model; on x86 a store costs an xchg, a load nothing more).
//
// Safety: every index and length read from shared memory is checked before use (a
// corrupt or hostile peer yields an error text, never an out-of-bounds access); what is
// checked is copied first, so the peer changing it afterwards changes nothing. The payload
// bytes themselves stay the peer's to scribble on, as on any shared page.
//
// Each object is used by one thread at a time (the connection's loop thread).
#pragma once

#include "backends/shm/segment.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace netio::shm {

constexpr std::size_t entry_header_size = 16;
constexpr std::size_t entry_alignment = 64;
constexpr std::uint64_t pad_marker = ~std::uint64_t{0};

// What an entry's payload is: the bytes themselves, or where they are in the sender's
// SendArea (AreaReference), which the receiver lends in place like an entry.
enum class EntryKind : std::uint64_t { bytes = 0, area_reference = 1 };

// The bytes an entry of `payload` bytes takes in a ring.
constexpr std::size_t entry_size(std::size_t payload) noexcept {
  return (entry_header_size + payload + entry_alignment - 1) / entry_alignment * entry_alignment;
}

class RingProducer {
 public:
  RingProducer() = default;
  RingProducer(RingControl* control, std::byte* bytes, std::size_t capacity) noexcept
      : control_(control), bytes_(bytes), capacity_(capacity) {}

  // Copies `payload` in as one entry and publishes it. False when there is no room now
  // (call wait_for_space() before sleeping). Sets `corrupt` (and returns false) when the
  // consumer's tail makes no sense. `payload` must be at most capacity / 2 - header.
  bool push(std::span<const std::byte> payload, std::string& corrupt, EntryKind kind = EntryKind::bytes);
  // Everything the consumer freed so far (at least where it last was); sets `corrupt` (and
  // returns the old value) when its tail makes no sense.
  std::uint64_t freed(std::string& corrupt);
  // Announces that the producer will sleep until the consumer frees up to `index`; false
  // when it did meanwhile (the flag is withdrawn).
  bool wait_for_free(std::uint64_t index, std::string& corrupt);
  // Announces that the producer will sleep until the consumer frees space; false when
  // space freed meanwhile (the flag is withdrawn: go on pushing).
  bool wait_for_space(std::size_t payload, std::string& corrupt);
  // After consuming: whether the consumer sleeps and must be woken (the flag is cleared).
  bool consumer_needs_wake() noexcept;
  // Every byte produced has been delivered to the consumer (for the end of a stream).
  bool all_delivered() const noexcept;
  std::uint64_t head() const noexcept { return head_; }
  std::size_t capacity() const noexcept { return capacity_; }
  // Where the last entry pushed has its payload (its padding follows, up to 64 bytes in all).
  std::byte* last_payload() const noexcept { return last_payload_; }

 private:
  bool room_for(std::size_t needed, std::string& corrupt);

  RingControl* control_ = nullptr;
  std::byte* bytes_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t head_ = 0;  // ours; the shared copy is only written
  std::uint64_t tail_ = 0;  // the consumer's, as last read and checked
  std::byte* last_payload_ = nullptr;
};

class RingConsumer {
 public:
  struct Entry {
    std::span<std::byte> payload;  // empty span with end == 0: none
    std::uint64_t end = 0;         // the index after it: free up to here once done with it
    EntryKind kind = EntryKind::bytes;
  };

  RingConsumer() = default;
  RingConsumer(RingControl* control, std::byte* bytes, std::size_t capacity, std::size_t max_payload) noexcept
      : control_(control), bytes_(bytes), capacity_(capacity), max_payload_(max_payload) {}

  // The next entry (pads skipped), checked against the ring and max_payload; end == 0 when
  // none is there. Sets `corrupt` when the producer's head or an entry header makes no
  // sense.
  Entry next(std::string& corrupt);
  // Frees every byte before `index` (an Entry::end, or read_index() once nothing is lent).
  void free_to(std::uint64_t index) noexcept;
  std::uint64_t read_index() const noexcept { return read_; }
  std::size_t max_payload() const noexcept { return max_payload_; }
  // Announces that the consumer will sleep until data comes; false when some came meanwhile
  // (the flag is withdrawn).
  bool wait_for_data(std::string& corrupt);
  // After freeing: whether the producer sleeps and must be woken (the flag is cleared).
  bool producer_needs_wake() noexcept;
  // Publishes how far this side has read (RingProducer::all_delivered()).
  void publish_delivered() noexcept;
  // The furthest position the ring's bytes were written to so far (the memory it holds).
  std::size_t high_water() const noexcept { return high_water_; }

 private:
  bool load_head(std::string& corrupt);

  RingControl* control_ = nullptr;
  std::byte* bytes_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t max_payload_ = 0;
  std::uint64_t head_ = 0;  // the producer's, as last read and checked
  std::uint64_t read_ = 0;  // the next entry to take
  std::uint64_t tail_ = 0;  // freed up to here
  std::size_t high_water_ = 0;
};

}  // namespace netio::shm
