// SPDX-License-Identifier: MIT
#include "netio/receive_budget.hpp"

namespace netio {

std::size_t ReceiveBudget::available() const noexcept {
  const std::size_t used = used_.load(std::memory_order_relaxed);
  return used < limit_ ? limit_ - used : 0;
}

bool ReceiveBudget::try_take(std::size_t bytes) noexcept {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (used + bytes > peak && !peak_.compare_exchange_weak(peak, used + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

void ReceiveBudget::give_back(std::size_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }

}  // namespace netio
