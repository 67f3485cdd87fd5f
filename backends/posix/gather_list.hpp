// SPDX-License-Identifier: MIT
// The scatter-gather list of one sendmsg(): the bytes of queued frames not yet written, in
// order, up to a byte budget and a number of iovecs.
//
// Not thread-safe; a value type used on the loop thread. The iovecs point into the caller's
// frames and are valid as long as those are.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <span>

namespace netio::posix {

class GatherList {
 public:
  // `skip`: bytes at the front that an earlier call already wrote; `budget`: the most bytes
  // the list may hold (at least 1).
  GatherList(std::span<iovec> slots, std::size_t skip, std::size_t budget) noexcept
      : slots_(slots), skip_(skip), budget_(budget) {}

  // Appends what is left of [data, data + size) after the skip, cut to the budget. Returns
  // false once the list is full (budget or iovecs used up): the caller stops adding.
  bool add(const std::byte* data, std::size_t size) noexcept {
    if (full()) return false;
    if (skip_ >= size) {  // written already (or empty): no iovec
      skip_ -= size;
      return true;
    }
    data += skip_;
    size -= skip_;
    skip_ = 0;
    const std::size_t take = std::min(size, budget_ - bytes_);
    // iovec is a C struct without const: sendmsg() only reads through it.
    slots_[count_++] = {const_cast<std::byte*>(data), take};
    bytes_ += take;
    return !full();
  }

  bool full() const noexcept { return count_ == slots_.size() || bytes_ >= budget_; }
  iovec* data() const noexcept { return slots_.data(); }
  std::size_t count() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::span<iovec> slots_;
  std::size_t skip_;
  std::size_t budget_;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace netio::posix
