// SPDX-License-Identifier: MIT
// The replies a receive socket sends back on one connection: a bounded pool of buffers,
// registered for the back-end when it needs that, and the hand-off from any thread to the
// loop thread, where the back-end's send_reply() runs. The pool's size is the reply window:
// when the sender does not take its replies, they wait in the back-end, the pool runs dry and
// try_send() says false; memory never grows.
//
// Thread-safety: try_send() from any thread; on_completed() and close() on the loop thread.
// Lifetime: shared by every Peer of the connection; close() (when the connection ends) frees
// the pool while the back-end that registered it still exists, so a Peer kept longer holds
// no back-end memory.
#pragma once

#include "netio/backend.hpp"
#include "netio/buffer.hpp"
#include "netio/event_loop.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace netio::detail {

class ReplySender : public std::enable_shared_from_this<ReplySender> {
 public:
  // `socket` must stay open until close(); `window`: replies queued at most.
  ReplySender(EventLoop& loop, LowLevelReceiveSocket& socket, std::size_t window, std::string peer);

  // Copies `message` and queues it after the replies before it. `wait`: up to `timeout` for
  // room, on user threads only. Returns false when there is no room. Throws as
  // Peer::try_reply() documents.
  bool send(std::span<const std::byte> message, bool wait, std::chrono::nanoseconds timeout);
  void on_completed(Buffer* buffer);  // loop thread
  void close() noexcept;              // loop thread

 private:
  bool send_on_loop(std::span<const std::byte> message, bool wait);  // loop thread
  // Sizes `buffer` (from pool_) for `message` and copies it in; gives it back on failure.
  void fill(Buffer* buffer, std::span<const std::byte> message);
  void drain();  // loop thread

  EventLoop& loop_;
  LowLevelReceiveSocket* socket_;  // loop thread only; null once closed
  std::size_t max_size_;
  std::string peer_;

  std::mutex mutex_;
  std::condition_variable room_;
  // Null once closed. Set only on the loop thread (close()), which reads it without the
  // lock; other threads read it under mutex_.
  std::unique_ptr<BufferPool> pool_;
  std::atomic<std::size_t> waiters_{0};   // user threads waiting for room; written under mutex_
  std::vector<Buffer*> submitted_;        // guarded by mutex_: from user threads, for the loop
  std::atomic<bool> has_submitted_{false};  // !submitted_.empty(), written under mutex_
  bool drain_scheduled_ = false;          // guarded by mutex_
  std::vector<Buffer*> draining_;         // loop thread only
};

}  // namespace netio::detail
