// SPDX-License-Identifier: MIT
// The memory of a finished reassembly, kept for the next one instead of being freed.
// Allocating a large block per message made the C library give memory back to the kernel and
// take it again, a page fault per 4 KiB: 2 MiB messages over libfabric went from 33 to
// 9 Gb/s (docs/design/defaults.md, "Reassembly memory").
//
// One per high-throughput receive socket, shared by its connections' parsers. Thread-safe:
// the consumer takes and keeps memory under its turn, and a Message handed out by recv()
// gives its memory back from whatever thread destroys it (it holds a weak_ptr, so a Message
// may outlive the socket). While kept, the memory is counted whole against the budget of
// the charge it comes with; memory the budget cannot count is freed instead, and so is a
// block far larger than the next reassembly needs (PageParser).
#pragma once

#include "budget_charge.hpp"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace netio::detail {

class ReassemblySpare {
 public:
  struct Memory {
    std::vector<std::byte> bytes;  // empty, with its capacity
    BudgetCharge charge;           // counts the whole capacity
  };

  // The kept memory, or none (capacity 0).
  Memory take() {
    std::lock_guard lock(mutex_);
    return std::exchange(kept_, Memory{});
  }

  // Keeps `bytes` in place of the memory kept so far (the newest reflects the sizes now
  // arriving), after growing `charge` to its whole capacity; frees it when that does not fit.
  void keep(std::vector<std::byte> bytes, BudgetCharge charge) noexcept {
    const std::size_t capacity = bytes.capacity();
    if (capacity == 0 || !charge.grow(capacity - std::min(capacity, charge.bytes()))) return;
    bytes.clear();
    Memory replaced{std::move(bytes), std::move(charge)};
    {
      std::lock_guard lock(mutex_);
      std::swap(kept_, replaced);
    }
    // `replaced` (the older memory) is freed here, outside the lock.
  }

  std::size_t capacity() const {
    std::lock_guard lock(mutex_);
    return kept_.bytes.capacity();
  }

 private:
  mutable std::mutex mutex_;
  Memory kept_;
};

}  // namespace netio::detail
