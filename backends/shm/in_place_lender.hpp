// SPDX-License-Identifier: MIT
// The entries of an inbound ring lent out in place as ReceivedBuffers (the receiver parses
// a page where the sender wrote it), at most `credits` at a time. Entries come back in any
// order and on any thread, and their credit with them; the ring is freed up to the end of
// the longest prefix of entries (in the order lent) that came back (reclaim()).
//
// Shared by every ReceivedBuffer it lent, and holding the segment: a buffer outlives the
// connection and keeps its bytes mapped. lend()/reclaim() on the loop thread only;
// give_back() on any thread calls the waker (set by the connection, cleared when it
// closes) so the loop thread reclaims.
#pragma once

#include "backends/shm/area_residency.hpp"
#include "backends/shm/segment.hpp"
#include "netio/backend/backend.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace netio::shm {

class SendArea;

class InPlaceLender final : public ReceiveBufferOwner {
 public:
  InPlaceLender(std::shared_ptr<Segment> segment, std::size_t credits);

  // A Buffer over `payload` (which the ring frees up to `end` once it is back); nullptr
  // when every credit is out. `returned`, when given (a page of the sender's area), is set
  // to 1 as soon as the buffer comes back, in whatever order: the sender's page is its own
  // again then, while the ring still frees in order.
  Buffer* lend(std::span<std::byte> payload, std::uint64_t end, std::byte* returned = nullptr);
  bool exhausted() const noexcept { return free_.empty(); }
  bool none_lent() const noexcept { return order_.empty(); }
  // Takes back what came back; returns the index the ring may be freed to: the end of the
  // returned prefix, or `read_index` once nothing is lent.
  std::uint64_t reclaim(std::uint64_t read_index);
  void give_back(Buffer* buffer) noexcept override;
  void set_waker(std::function<void()> waker);
  // Keeps the peer's send area, whose pages are lent too, mapped as long as this lender (and
  // so every buffer it lent), and keeps at most `window` bytes of it resident besides what
  // is lent (AreaResidency). Once, on the loop thread.
  void hold_area(std::shared_ptr<SendArea> area, std::size_t window);
  // Bytes of the peer's area resident now, and blocks of it released so far. Loop thread.
  std::size_t area_resident() const noexcept { return residency_ ? residency_->resident() : 0; }
  std::uint64_t area_released() const noexcept { return residency_ ? residency_->released() : 0; }

 private:
  std::shared_ptr<Segment> segment_;
  std::shared_ptr<SendArea> area_;
  std::optional<AreaResidency> residency_;  // loop thread
  std::vector<Buffer> slots_;
  struct Lent {
    std::uint64_t end;  // the ring frees up to here once this and all before it are back
    bool back;
  };
  std::deque<Lent> order_;                       // lent entries in ring order; loop thread
  std::uint64_t first_sequence_ = 0;             // order_.front()'s number; loop thread
  std::vector<std::uint64_t> sequence_of_slot_;  // loop thread
  std::vector<std::byte*> returned_flags_;       // set at lend() on the loop thread, read at give_back()
  std::vector<std::size_t> free_;                // loop thread
  std::uint64_t freed_to_ = 0;                   // loop thread
  // Recursive: give_back() wakes the connection under it, and once the loop has stopped
  // (a receive socket outliving its Context) post() runs the wake-up's reclaim() at once,
  // on the same thread.
  std::recursive_mutex mutex_;
  std::vector<std::size_t> returned_;  // slots given back since the last reclaim(); guarded by mutex_
  std::function<void()> waker_;        // guarded by mutex_
};

}  // namespace netio::shm
