// What both user-level send sockets share: a low-level send socket, a bounded pool of
// buffers registered with its back-end, and the hand-off of filled buffers from user
// threads to the loop thread. A buffer goes pool -> (filled by the caller) -> submit() ->
// back-end -> completion -> pool; that cycle is what bounds memory and carries back-pressure.
//
// Thread-safety: submit(), wait_idle(), state() and pool() from any thread. The hand-off
// costs a lock and, when the loop is not already scheduled to drain, one posted task;
// no heap allocation per buffer.
// Lifetime: close() (or the destructor) closes the connection on the loop thread; buffers
// in flight come back to the pool.
#pragma once

#include "handshake.hpp"
#include "send_connection_state.hpp"
#include "netio/backend.hpp"
#include "netio/buffer.hpp"
#include "netio/context.hpp"
#include "netio/stats.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace netio::detail {

class BufferSender {
 public:
  BufferSender(Context& context, const Endpoint& remote, const Hello& hello, std::size_t buffer_count,
               std::size_t buffer_size, StatsCounters& stats);
  ~BufferSender();
  BufferSender(const BufferSender&) = delete;
  BufferSender& operator=(const BufferSender&) = delete;

  BufferPool& pool() noexcept { return *pool_; }
  const SendConnectionState& state() const noexcept { return state_; }
  const Endpoint& remote() const noexcept { return remote_; }
  EventLoop& loop() noexcept { return loop_; }

  // Hands a filled buffer (from pool()) to the back-end; on the loop thread at once.
  void submit(Buffer* buffer);
  // Waits until every submitted buffer has completed (was handed to the network). Throws
  // Errc::timeout, or the connection's failure if buffers were lost to it.
  void wait_idle(std::chrono::nanoseconds timeout);
  void close() noexcept;
  // Closes the connection because of `error`, which later calls report.
  void abort(const Error& error);

 private:
  void drain_submitted();             // loop thread
  void send_on_loop(Buffer* buffer);  // loop thread
  void on_connected(const ConnectionInfo& info);
  void on_failed(const Error& error);
  void on_completed(Buffer* buffer);
  void reclaim_all();  // loop thread: every buffer the back-end held goes back to the pool

  EventLoop& loop_;
  Endpoint remote_;
  StatsCounters& stats_;
  SendConnectionState state_;
  std::unique_ptr<LowLevelSendSocket> socket_;  // loop thread only
  std::unique_ptr<BufferPool> pool_;
  bool closed_ = false;                         // loop thread only

  std::mutex submit_mutex_;
  std::vector<Buffer*> submitted_;              // guarded by submit_mutex_
  bool drain_scheduled_ = false;                // guarded by submit_mutex_
  std::vector<Buffer*> draining_;               // loop thread only

  std::deque<Buffer*> unconnected_;             // loop thread: waiting for the connection
  std::deque<Buffer*> in_flight_;               // loop thread: with the back-end, in order

  std::mutex idle_mutex_;
  std::condition_variable idle_changed_;
  std::size_t outstanding_ = 0;                 // guarded by idle_mutex_: submitted, not completed
  std::size_t lost_ = 0;                        // guarded by idle_mutex_: taken back from a dead connection
};

}  // namespace netio::detail
