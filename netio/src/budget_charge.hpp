// SPDX-License-Identifier: MIT
// Bytes counted against a ReceiveBudget by one owner (a connection's buffers, a message
// being reassembled), given back when the charge is released or destroyed.
// Not thread-safe itself (one owner); the budget it counts against is.
#pragma once

#include "netio/receive_budget.hpp"

#include <cstddef>
#include <memory>
#include <utility>

namespace netio::detail {

// The counting side of a ReceiveBudget, which applications only read.
struct BudgetAccounting {
  static bool try_take(ReceiveBudget& budget, std::size_t bytes) noexcept { return budget.try_take(bytes); }
  static void give_back(ReceiveBudget& budget, std::size_t bytes) noexcept { budget.give_back(bytes); }
  static void count_refusal(ReceiveBudget& budget) noexcept { budget.count_refusal(); }
};

class BudgetCharge {
 public:
  BudgetCharge() = default;
  explicit BudgetCharge(std::shared_ptr<ReceiveBudget> budget) noexcept : budget_(std::move(budget)) {}
  ~BudgetCharge() { release(); }
  BudgetCharge(BudgetCharge&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
  BudgetCharge& operator=(BudgetCharge&& other) noexcept {
    if (this != &other) {
      release();
      budget_ = std::move(other.budget_);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  // Counts `bytes` more; false (nothing more counted) when they do not fit. Without a
  // budget everything fits.
  bool grow(std::size_t bytes) noexcept {
    if (budget_ && !BudgetAccounting::try_take(*budget_, bytes)) return false;
    bytes_ += bytes;
    return true;
  }
  // Gives back what is counted beyond `bytes`.
  void shrink_to(std::size_t bytes) noexcept {
    if (bytes >= bytes_) return;
    if (budget_) BudgetAccounting::give_back(*budget_, bytes_ - bytes);
    bytes_ = bytes;
  }
  void release() noexcept {
    if (budget_ && bytes_ != 0) BudgetAccounting::give_back(*budget_, bytes_);
    bytes_ = 0;
  }
  std::size_t bytes() const noexcept { return bytes_; }
  const std::shared_ptr<ReceiveBudget>& budget() const noexcept { return budget_; }

 private:
  std::shared_ptr<ReceiveBudget> budget_;
  std::size_t bytes_ = 0;
};

// The budget a receive socket counts against: the shared one its options name, or one of
// its own of `bytes`.
inline std::shared_ptr<ReceiveBudget> budget_from(const std::shared_ptr<ReceiveBudget>& shared, std::size_t bytes) {
  return shared ? shared : std::make_shared<ReceiveBudget>(bytes);
}

}  // namespace netio::detail
