// SPDX-License-Identifier: MIT
#include "backends/shm/area_residency.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace netio::shm {

std::pair<std::uint64_t, std::uint64_t> AreaResidency::blocks_of(std::span<const std::byte> bytes) const noexcept {
  const auto offset = static_cast<std::uint64_t>(bytes.data() - area_.data());
  const std::uint64_t end = offset + std::max<std::size_t>(bytes.size(), 1);
  return {offset / block_size, (end - 1) / block_size};
}

void AreaResidency::lent(std::span<const std::byte> bytes) {
  const auto [first, last] = blocks_of(bytes);
  for (std::uint64_t index = first; index <= last; ++index) {
    auto [it, inserted] = blocks_.try_emplace(index);
    if (!inserted && it->second.lent == 0) idle_.erase(it->second.idle_at);
    ++it->second.lent;
  }
  release_beyond_window();
}

void AreaResidency::returned(std::span<const std::byte> bytes) {
  const auto [first, last] = blocks_of(bytes);
  for (std::uint64_t index = first; index <= last; ++index) {
    const auto it = blocks_.find(index);
    if (it == blocks_.end() || it->second.lent == 0) continue;  // not lent: nothing to count
    if (--it->second.lent == 0) it->second.idle_at = idle_.insert(idle_.end(), index);
  }
}

void AreaResidency::release_beyond_window() {
  while (resident() > window_ && !idle_.empty()) {
    // A run of blocks given back together and adjacent in the area goes in one call.
    const std::uint64_t start = idle_.front();
    std::uint64_t count = 0;
    while (!idle_.empty() && idle_.front() == start + count && resident() > window_) {
      blocks_.erase(idle_.front());
      idle_.pop_front();
      ++count;
    }
    const std::size_t offset = start * block_size;
    const std::size_t length = std::min(count * block_size, area_.size() - offset);
    ::madvise(area_.data() + offset, length, MADV_DONTNEED);  // advice: nothing to do when it fails
    released_ += count;
  }
}

}  // namespace netio::shm
