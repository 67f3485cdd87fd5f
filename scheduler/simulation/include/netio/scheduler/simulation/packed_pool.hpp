// SPDX-License-Identifier: MIT
// A pool of values by index for the simulator's records in flight (messages between ports,
// closures), handing out the lowest free index first, so that the records in use stay packed
// at the front of one array.
//
// Why not a stack of free indices: a 192 x 192 run sends 600,000 contributions at its start,
// and the stack then holds their indices in the order they were freed, scattered over 30 MB;
// the few thousand records in flight afterwards would each sit on a page of its own (a TLB
// and cache miss per event). Lowest-first keeps them within a few hundred kilobytes.
//
// put() and take() cost O(1) but for a scan over the words of indices all in use (at most
// the span of the records in flight, 64 per word). Not thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace netio::scheduler::simulation {

template <typename T>
class PackedPool {
 public:
  // Keeps `value`; returns its index, the lowest free one.
  std::uint32_t put(T value) {
    const std::uint32_t index = lowest_free();
    if (index == values_.size())
      values_.push_back(std::move(value));
    else
      values_[index] = std::move(value);
    return index;
  }
  // The value at `index` (one put() returned and not taken yet).
  T& operator[](std::uint32_t index) noexcept { return values_[index]; }
  // Takes the value at `index` out and frees the index.
  T take(std::uint32_t index) {
    T value = std::move(values_[index]);
    values_[index] = T{};
    const std::size_t word = index / 64;
    free_[word] |= std::uint64_t{1} << (index % 64);
    if (word < first_) first_ = word;
    return value;
  }

 private:
  std::uint32_t lowest_free() {
    while (first_ < free_.size() && free_[first_] == 0) ++first_;
    if (first_ == free_.size()) {
      // None free: the next index after the last, in use from now on.
      const auto index = static_cast<std::uint32_t>(values_.size());
      if (index % 64 == 0) free_.push_back(0);
      return index;
    }
    const int bit = std::countr_zero(free_[first_]);
    free_[first_] &= ~(std::uint64_t{1} << bit);
    return static_cast<std::uint32_t>(first_ * 64 + static_cast<std::size_t>(bit));
  }

  std::vector<T> values_;
  std::vector<std::uint64_t> free_;  // a bit per index: 1 when free
  std::size_t first_ = 0;            // no word below it has a free index
};

}  // namespace netio::scheduler::simulation
