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
#include "reply_receiver.hpp"
#include "send_connection_state.hpp"
#include "netio/backend.hpp"
#include "netio/buffer.hpp"
#include "netio/context.hpp"
#include "netio/stats.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace netio::detail {

class BufferSender {
 public:
  // Connects with `hello`, then sends the introduction of `identity` ahead of everything
  // else; replies arrive as `replies` says. Throws netio::Error for a bad identity.
  BufferSender(Context& context, const Endpoint& remote, const Hello& hello, const Identity& identity,
               ReplyOptions replies, std::size_t buffer_count, std::size_t buffer_size, StatsCounters& stats);
  ~BufferSender();
  BufferSender(const BufferSender&) = delete;
  BufferSender& operator=(const BufferSender&) = delete;

  BufferPool& pool() noexcept { return *pool_; }
  // The back-end's LowLevelSendSocket::efficient_buffer_size() for this connection.
  std::size_t efficient_buffer_size() const noexcept { return efficient_buffer_size_; }
  const SendConnectionState& state() const noexcept { return state_; }
  const Endpoint& remote() const noexcept { return remote_; }
  EventLoop& loop() noexcept { return loop_; }
  ReplyReceiver& replies() noexcept { return *replies_; }

  // Hands a filled buffer (from pool()) to the back-end; on the loop thread at once.
  void submit(Buffer* buffer);
  // Whether send_borrowed() may be used: connected, and the back-end sends plain memory.
  bool can_send_borrowed() const noexcept { return sends_unregistered_.load(std::memory_order_acquire); }
  // Sends `data` from the caller's memory, after everything submitted before, in frames of
  // at most `frame_size` bytes, and returns once the back-end is done with it: the caller
  // may reuse the memory then. Not from the loop thread. Throws the connection's failure;
  // on timeout closes the connection (the back-end must let go of the memory before this
  // returns, and the receiver has a torn message) and throws Errc::timeout.
  void send_borrowed(std::span<const std::byte> data, std::size_t frame_size, std::chrono::nanoseconds timeout);
  // Waits until every submitted buffer has completed (was handed to the network). Throws
  // Errc::timeout, or the connection's failure if buffers were lost to it.
  void wait_idle(std::chrono::nanoseconds timeout);
  void close() noexcept;
  // Closes the connection because of `error`, which later calls report.
  void abort(const Error& error);

 private:
  void drain_submitted();             // loop thread
  void send_on_loop(Buffer* buffer);    // loop thread
  void send_to_socket(Buffer* buffer);  // loop thread; an exception fails the connection
  void on_connected(const ConnectionInfo& info);
  void on_failed(const Error& error);
  void on_completed(Buffer* buffer);
  void reclaim_all();  // loop thread: every buffer the back-end held goes back to the pool

  EventLoop& loop_;
  Endpoint remote_;
  StatsCounters& stats_;
  SendConnectionState state_;
  std::shared_ptr<ReplyReceiver> replies_;  // shared with the back-end's on_reply callback
  std::unique_ptr<LowLevelSendSocket> socket_;  // loop thread only
  std::unique_ptr<BufferPool> pool_;
  std::size_t efficient_buffer_size_ = 0;       // set in the constructor, then constant
  std::vector<std::byte> introduction_bytes_;   // the first buffer sent, not from the pool
  Buffer introduction_{};
  MemoryRegistrar* registrar_ = nullptr;        // the introduction's, if the back-end registers
  bool closed_ = false;                         // loop thread only

  std::mutex submit_mutex_;
  std::vector<Buffer*> submitted_;              // guarded by submit_mutex_
  bool drain_scheduled_ = false;                // guarded by submit_mutex_
  std::vector<Buffer*> draining_;               // loop thread only

  std::deque<Buffer*> unconnected_;             // loop thread: waiting for the connection
  std::deque<Buffer*> in_flight_;               // loop thread: with the back-end, in order

  // Frames of the message send_borrowed() is sending: a fixed array, so that the loop
  // thread can tell them from pool buffers by address while a user thread refills it.
  static constexpr std::size_t borrowed_window = 8;
  std::array<Buffer, borrowed_window> borrowed_{};
  bool is_borrowed(const Buffer* buffer) const noexcept {
    return buffer >= borrowed_.data() && buffer < borrowed_.data() + borrowed_.size();
  }
  std::atomic<bool> sends_unregistered_{false};

  std::mutex idle_mutex_;
  std::condition_variable idle_changed_;
  std::size_t outstanding_ = 0;                 // guarded by idle_mutex_: submitted, not completed
  std::size_t lost_ = 0;                        // guarded by idle_mutex_: taken back from a dead connection
  std::size_t borrowed_outstanding_ = 0;        // guarded by idle_mutex_
  std::size_t borrowed_lost_ = 0;               // guarded by idle_mutex_
};

}  // namespace netio::detail
