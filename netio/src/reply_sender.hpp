// SPDX-License-Identifier: MIT
// The replies a receive socket sends back on one connection: a bounded pool of buffers,
// registered for the back-end when it needs that, and the hand-off from any thread to the
// loop thread, where the back-end's send_reply() runs. The pool's size is the reply window:
// when the sender does not take its replies, they wait in the back-end, the pool runs dry and
// try_send() says false; memory never grows.
//
// The largest reply is the smaller of what the sender declared it takes and the receiver's
// own limit (AdmissionOptions::max_reply_size). The pool's memory (the buffers allocated so
// far, each as large as the largest reply it carried: at most window × the largest reply)
// counts against the receive budget, grown as a reply needs more and given back at close();
// a reply the budget has no room for is refused as one beyond the window, and the buffer
// that grew for it is freed.
//
// Thread-safety: try_send() and stalled_for() from any thread; on_completed() and close() on
// the loop thread.
// Lifetime: shared by every Peer of the connection; close() (when the connection ends) frees
// the pool while the back-end that registered it still exists, so a Peer kept longer holds
// no back-end memory.
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/receive_budget.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace netio::detail {

class ReplySender : public std::enable_shared_from_this<ReplySender> {
 public:
  // `socket` must stay open until close(); `window`: replies queued at most; `max_size`:
  // the receiver's own limit on a reply; `budget` (may be null): counts queued replies;
  // `socket_queued` (may be null): the replies queued on all of the socket's connections,
  // which this one's count is part of until close() (its metrics: netio_socket_replies_queued).
  ReplySender(EventLoop& loop, LowLevelReceiveSocket& socket, std::size_t window, std::size_t max_size,
              std::shared_ptr<ReceiveBudget> budget, std::string peer,
              std::shared_ptr<std::atomic<std::uint64_t>> socket_queued = nullptr);

  // Copies `message` and queues it after the replies before it. `wait`: up to `timeout` for
  // room, on user threads only. Returns false when there is no room. Throws as
  // Peer::try_reply() documents.
  bool send(std::span<const std::byte> message, bool wait, std::chrono::nanoseconds timeout);
  void on_completed(Buffer* buffer);  // loop thread
  void close() noexcept;              // loop thread
  // How long replies have waited with none taken (zero when none waits): the peer does not
  // read them.
  std::chrono::nanoseconds stalled_for(std::chrono::steady_clock::time_point now) const noexcept;

 private:
  bool send_on_loop(std::span<const std::byte> message, bool wait);  // loop thread
  // Sizes `buffer` (from pool_) for `message`, counts the pool against the budget and copies
  // the message in. False (the buffer given back) when the budget has no room; throws (the
  // buffer given back) when it cannot allocate.
  bool fill(Buffer* buffer, std::span<const std::byte> message);
  // The answer to a reply the budget has no room for: false, or with `wait`, an error.
  bool no_budget(bool wait);
  // Brings what is counted against the budget to what the pool holds now; false (nothing
  // more counted) when the growth does not fit.
  bool charge_pool();
  void drain();  // loop thread

  EventLoop& loop_;
  LowLevelReceiveSocket* socket_;  // loop thread only; null once closed
  std::size_t declared_max_size_;  // what the sender takes, as the back-end carries it (clamped there too)
  std::size_t limit_;              // the receiver's own (AdmissionOptions::max_reply_size)
  std::size_t max_size_;           // what this receiver sends: the smaller of the two
  std::shared_ptr<ReceiveBudget> budget_;
  std::string peer_;
  std::mutex charge_mutex_;
  std::size_t charged_ = 0;             // the pool's bytes counted against budget_; guarded by charge_mutex_
  std::atomic<std::size_t> queued_{0};  // replies filled and not completed
  std::shared_ptr<std::atomic<std::uint64_t>> socket_queued_;  // queued_ added in, for the socket's metrics
  // When a reply was last taken (or the first queued after none waited), in steady ticks.
  std::atomic<std::chrono::steady_clock::rep> last_progress_{0};
  std::atomic<bool> budget_refusal_logged_{false};

  std::mutex mutex_;
  std::condition_variable room_;
  // Null once closed. Set only on the loop thread (close()), which reads it without the
  // lock; other threads read it under mutex_.
  std::unique_ptr<BufferPool> pool_;
  std::atomic<std::size_t> waiters_{0};     // user threads waiting for room; written under mutex_
  std::vector<Buffer*> submitted_;          // guarded by mutex_: from user threads, for the loop
  std::atomic<bool> has_submitted_{false};  // !submitted_.empty(), written under mutex_
  bool drain_scheduled_ = false;            // guarded by mutex_
  std::vector<Buffer*> draining_;           // loop thread only
};

}  // namespace netio::detail
