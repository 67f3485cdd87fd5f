// SPDX-License-Identifier: MIT
/// @file
/// A bound on the memory receive sockets hold for their senders, set by the receiver, not
/// the senders. It counts what connections hold, not what they could hold:
/// - every accepted connection's receive buffers, from the handshake until the connection
///   is gone: 64 KiB from the handshake, then each buffer's memory as bytes first fill it, up
///   to the credits it may fill ahead of the application times the largest buffer it sends
///   (TCP allocates as bytes arrive; libfabric posts buffers whose pages are backed as
///   messages write them). Where posted buffers are held from the accept (libfabric on a
///   provider that pins registered memory, verbs), the credits times the largest buffer (a
///   high-throughput sender's page size; a low-latency receiver's max_message_size) from the
///   handshake;
/// - messages reassembled from several pages, as their bytes arrive (never reserved from a
///   length field), until recv() hands them out;
/// - the buffers of replies queued to a peer (Peer::try_reply): as many as were queued at
///   once, each as large as the largest reply it carried, until the connection ends.
/// When a newcomer does not fit, connections of that socket that hold budget and have sent no
/// data are evicted first (unintroduced ones first, oldest first). Then an up-front
/// connection that does not fit whole is given fewer credits (its sender feels back-pressure
/// sooner); one that does not fit a single buffer (elsewhere: 64 KiB) is rejected in the
/// handshake with a reason naming the budget. A sender whose buffers, or a message whose
/// reassembly, does not fit disconnects with that reason, and a reply that does not fit is
/// refused like one beyond the reply window. So the total stays within limit() whatever the
/// number of peers.
///
/// Every receive socket has a budget of its own (its options' memory_budget) unless given a
/// shared one: several sockets, or every socket of a context or process, may share one.
/// Thread-safety: everything, from any thread. Lifetime: hold it in a std::shared_ptr; the
/// sockets keep it alive as long as they use it.
#pragma once

#include <atomic>
#include <cstddef>

namespace netio {

namespace detail {
struct BudgetAccounting;  // what the sockets count (netio/src/budget_charge.hpp)
}

class ReceiveBudget {
 public:
  explicit ReceiveBudget(std::size_t limit_bytes) noexcept : limit_(limit_bytes) {}
  ReceiveBudget(const ReceiveBudget&) = delete;
  ReceiveBudget& operator=(const ReceiveBudget&) = delete;

  std::size_t limit() const noexcept { return limit_; }
  /// Bytes counted now, and the most ever counted at once.
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  std::size_t available() const noexcept;
  /// Connections and messages turned away because they did not fit.
  std::size_t refusals() const noexcept { return refusals_.load(std::memory_order_relaxed); }

 private:
  friend struct detail::BudgetAccounting;
  /// Counts `bytes` if they fit under the limit; false (nothing counted) if not.
  bool try_take(std::size_t bytes) noexcept;
  void give_back(std::size_t bytes) noexcept;
  void count_refusal() noexcept { refusals_.fetch_add(1, std::memory_order_relaxed); }

  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::size_t> refusals_{0};
};

}  // namespace netio
