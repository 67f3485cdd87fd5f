// SPDX-License-Identifier: MIT
// What both user-level send sockets share: a low-level send socket, a bounded pool of
// buffers registered with its back-end, and the hand-off of filled buffers from user
// threads to the loop thread. A buffer goes pool -> (filled by the caller) -> submit() ->
// back-end -> completion -> pool; that cycle is what bounds memory and carries back-pressure.
//
// Thread-safety: submit(), close_async(), wait_idle(), state() and pool() from any thread.
// The hand-off costs a lock and, when the loop is not already scheduled to drain, one
// posted task; no heap allocation per buffer.
// Lifetime: always held by a std::shared_ptr (make_shared). Tasks this object posts and
// timers it arms hold a reference (or a weak one), never a bare `this`, so they are safe
// whichever thread drops the last reference and whenever. close_async() keeps the object
// alive (see closing_senders.hpp) until its close ends, after the owner let go of it. The
// destructor closes the connection (on the loop thread; buffers in flight are dropped).
#pragma once

#include "authentication.hpp"
#include "connect_backoff.hpp"
#include "handshake.hpp"
#include "netio/backend/backend.hpp"
#include "netio/backend/buffer.hpp"
#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/log.hpp"
#include "netio/socket_options.hpp"
#include "page_source.hpp"
#include "reply_receiver.hpp"
#include "send_connection_state.hpp"
#include "stats_counters.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace netio::detail {

class BufferSender : public std::enable_shared_from_this<BufferSender> {
 public:
  // Called with nullptr when everything submitted was sent, else with what went wrong.
  using OnClosed = std::function<void(const Error*)>;

  // Connects with `hello`, then sends the introduction of `identity` ahead of everything
  // else; replies arrive as `replies` says. With a `key`, the hello carries a challenge,
  // the listener must answer it (authentication.hpp: else the connection fails with
  // Errc::handshake_rejected) and the introduction carries this side's proof. Buffers come from a pool of buffer_count
  // × buffer_size of its own, or from a share of `shared_pages` when given (buffer_count is then the share,
  // shared_pages->per_connection()). Throws netio::Error for a bad identity or a shared pool of another back-end. With
  // `close_awaits_receiver`, a close ends only once the receiver has read everything, where the back-end can tell
  // (LowLevelSendSocket::end_stream), not once the back-end has sent it.
  //
  // A connection that was never up and fails to connect (nobody listens yet, the network
  // does not answer: anything but a listener's refusal with a reason, Errc::handshake_rejected)
  // is tried again with a fresh back-end socket after a back-off (connect_backoff.hpp) until
  // `connect_timeout` has passed since construction (0: for ever); then it fails with
  // Errc::timeout naming the receiver, this side's name, the attempts and the last error.
  // Negative `connect_timeout`: one attempt, whose failure is the connection's. Meanwhile
  // submitted buffers wait as before the first attempt (bounded by the pool); a close
  // started while retrying ends at once, dropping them. A lost connection is never retried.
  BufferSender(Context& context, const Endpoint& remote, Hello hello, const Identity& identity,
               const std::optional<PreSharedKey>& key, ReplyOptions replies, std::size_t buffer_count,
               std::size_t buffer_size, std::shared_ptr<PagePool> shared_pages = nullptr,
               bool close_awaits_receiver = false,
               std::chrono::nanoseconds connect_timeout = std::chrono::nanoseconds(-1));
  ~BufferSender();
  BufferSender(const BufferSender&) = delete;
  BufferSender& operator=(const BufferSender&) = delete;

  PageSource& pool() noexcept { return *pool_; }
  // The back-end's LowLevelSendSocket::efficient_buffer_size() for this connection.
  std::size_t efficient_buffer_size() const noexcept { return efficient_buffer_size_; }
  const SendConnectionState& state() const noexcept { return state_; }
  const Endpoint& remote() const noexcept { return remote_; }
  EventLoop& loop() noexcept { return loop_; }
  // The socket's counters live here: they outlive the user's socket while it closes.
  StatsCounters& stats() noexcept { return stats_; }
  ReplyReceiver& replies() noexcept { return *replies_; }

  // Hands a filled buffer (from pool()) to the back-end; on the loop thread at once.
  // False once close_async() started: the buffer was not taken (the caller gives it back).
  [[nodiscard]] bool submit(Buffer* buffer);
  // Whether send_borrowed() may be used: connected, and the back-end sends plain memory.
  bool can_send_borrowed() const noexcept { return sends_unregistered_.load(std::memory_order_acquire); }
  // Sends `data` from the caller's memory, after everything submitted before, in frames of
  // at most `frame_size` bytes, and returns once the back-end is done with it: the caller
  // may reuse the memory then. Not from the loop thread. Throws the connection's failure,
  // or Errc::closed when a close started meanwhile; on timeout closes the connection (the
  // back-end must let go of the memory before this returns, and the receiver has a torn
  // message) and throws Errc::timeout.
  void send_borrowed(std::span<const std::byte> data, std::size_t frame_size, std::chrono::nanoseconds timeout);
  // Waits until every submitted buffer has completed (was handed to the network): true, or
  // false on timeout. Throws the connection's failure if buffers were lost to it. Not from
  // the loop thread (the completions come on that thread).
  bool wait_idle(std::chrono::nanoseconds timeout);
  // Closes the connection because of `error`, which later calls report.
  void abort(const Error& error);
  // For a receiver known to be gone: abort() with Errc::closed naming the receiver and
  // `reason` (logged at info: it was asked for), then close_async(). Never waits on the
  // loop thread.
  void abandon(std::string_view reason);

  // Starts closing, without waiting, from any thread: from now on submit() refuses; what
  // was submitted goes out, and once the back-end completed all of it (or after `timeout`,
  // or when the connection fails) the connection closes and `on_closed` runs on the loop
  // thread. A second call only adds its on_closed (run at once if the close already ended).
  void close_async(std::chrono::nanoseconds timeout, OnClosed on_closed);
  // close_async(), then waits for the close to end. Not from the loop thread. Returns what
  // went wrong (what on_closed would have been given), or nothing; without an on_closed,
  // the close logs that itself.
  std::optional<Error> close_and_wait(std::chrono::nanoseconds timeout);
  bool closing() const noexcept { return (outstanding_.load(std::memory_order_acquire) & closing_bit) != 0; }
  // Context::stop(): the loop has stopped, so completions never come; ends the close now.
  void end_close_at_stop() noexcept;

  // Errc::would_block for `call`, which would have to wait on the event-loop thread.
  Error would_block(std::string_view call, std::string_view advice) const;
  // Throws would_block(call, advice) when called on the event-loop thread.
  void refuse_on_loop_thread(std::string_view call, std::string_view advice) const;
  // Throws Errc::closed once close_async() started or the Context was destroyed, or the
  // connection's failure.
  void throw_if_unusable() const;
  // Throws Errc::closed naming the socket when its Context was destroyed.
  void throw_if_context_gone() const;
  bool context_gone() const noexcept { return detail::context_gone(context_); }
  // To be called once the owner holds this object (the retries' timers need
  // shared_from_this()), from any thread: starts the connect_timeout timer, so that an attempt
  // that neither succeeds nor fails (a network that drops the request) ends then too, and the
  // retry of an attempt that failed before.
  void start();
  // Why no buffer came back, for a send that waited in vain: the receiver is slow, or (not
  // connected yet) not there.
  std::string_view why_no_buffer() const noexcept {
    return state_.connected() ? "the receiver is not keeping up"
                              : "not connected yet: the receiver is not there, and connecting is retried until "
                                "connect_timeout";
  }
  // Whether the connection is being tried again: an attempt failed, none succeeded yet.
  bool retrying() const noexcept { return retrying_.load(std::memory_order_acquire); }
  // Errc::closed for a send after close().
  Error closed_error() const;

 private:
  void drain_submitted();                          // loop thread
  void send_on_loop(Buffer* buffer);               // loop thread
  void send_to_socket(Buffer* buffer);             // loop thread; an exception fails the connection
  LowLevelSendSocket::Callbacks make_callbacks();  // for each attempt's socket; they call back `this`
  void on_connected(const ConnectionInfo& info);
  void on_connect_failed(const Error& error);           // loop thread: retries (after a back-off) or fails
  void connect_again();                                 // loop thread: the next attempt, on a fresh socket
  void give_up_connecting();                            // loop thread: connect_timeout passed
  void arm_connect_deadline();                          // loop thread
  void schedule_retry(std::chrono::nanoseconds delay);  // loop thread
  void on_failed(const Error& error);
  void on_completed(Buffer* buffer);
  void reclaim_all();         // loop thread: every buffer the back-end held goes back to the pool
  void close_now() noexcept;  // loop thread: closes the connection, dropping what is in flight
  void start_close(std::chrono::nanoseconds timeout, OnClosed on_closed);  // loop thread
  void maybe_finish_close();                                               // loop thread
  void finish_close(std::optional<Error> error) noexcept;                  // loop thread
  void report_closed(const std::optional<Error>& result) noexcept;         // loop thread: runs on_closed_

  Context context_;  // first, so it goes last: keeps the loop and back-end allocated if the Context went
  EventLoop& loop_;
  ClosingSenders& closing_senders_;  // the context's: keeps this alive while it closes unowned
  Endpoint remote_;
  StatsCounters stats_;
  SendConnectionState state_;
  std::unique_ptr<LowLevelSendSocket> socket_;  // loop thread only: this attempt's
  // Retrying (loop thread only, but retrying_): the first attempt's socket stays, closed, while
  // a later one's is used, since the pool's registrations may be its; the pool's send memory
  // (shm://'s send area) is handed to each later socket, which lends its pages as the first would.
  Backend& backend_;
  std::vector<std::byte> hello_bytes_;
  ReplyWindow reply_window_;
  std::string name_;  // this side's name, for the messages
  std::unique_ptr<LowLevelSendSocket> first_socket_;
  std::optional<ConnectBackoff> backoff_;  // unset: one attempt only
  std::chrono::nanoseconds connect_timeout_;
  std::string last_connect_error_;
  EventLoop::TimerId retry_timer_ = 0;
  EventLoop::TimerId deadline_timer_ = 0;
  std::atomic<bool> retrying_{false};                      // an attempt failed, none succeeded yet
  bool started_ = false;                                   // start() ran (loop thread)
  std::optional<std::chrono::nanoseconds> pending_retry_;  // failed before start(): its delay
  std::shared_ptr<BufferMemory>
      send_memory_;  // where the pool's buffers lie, if the back-end has it; outlives the pool
  std::unique_ptr<PageSource> pool_;
  std::size_t efficient_buffer_size_ = 0;      // set in the constructor, then constant
  std::shared_ptr<ReplyReceiver> replies_;     // shared with the back-end's on_reply callback
  std::vector<std::byte> introduction_bytes_;  // the first buffer sent, not from the pool
  std::optional<PreSharedKey> key_;            // authenticate with it (then introduction_bytes_
  AuthNonce nonce_{};                          // starts with the proof, filled in once connected)
  Buffer introduction_{};
  MemoryRegistrar* registrar_ = nullptr;    // the introduction's, if the back-end registers
  bool closed_ = false;                     // loop thread only
  std::optional<LogLevel> untold_failure_;  // loop thread only: a connect failure to log at close if nobody was told
  bool failure_logged_ = false;             // loop thread only: on_failed() said why, once

  std::mutex submit_mutex_;
  std::vector<Buffer*> submitted_;  // guarded by submit_mutex_
  bool drain_scheduled_ = false;    // guarded by submit_mutex_
  // !submitted_.empty(), written under submit_mutex_: the loop thread's own sends look at
  // this instead of taking the lock.
  std::atomic<bool> has_submitted_{false};
  std::vector<Buffer*> draining_;  // loop thread only

  std::deque<Buffer*> unconnected_;  // loop thread: waiting for the connection
  std::deque<Buffer*> in_flight_;    // loop thread: with the back-end, in order
  std::vector<Buffer*> lent_;        // loop thread: sent in place, not given back yet

  // The asynchronous close (loop thread, except outstanding_ and what idle_mutex_ guards).
  bool close_started_ = false;  // start_close() ran
  bool close_ending_ = false;   // finish_close() is running or ran
  const bool close_awaits_receiver_;
  bool stream_ended_ = false;  // the back-end's end_stream() took it: await the receiver
  std::vector<OnClosed> on_closed_;
  EventLoop::TimerId close_timer_ = 0;

  // Frames of the message send_borrowed() is sending: a fixed array, so that the loop
  // thread can tell them from pool buffers by address while a user thread refills it.
  static constexpr std::size_t borrowed_window = 8;
  std::array<Buffer, borrowed_window> borrowed_{};
  bool is_borrowed(const Buffer* buffer) const noexcept {
    return buffer >= borrowed_.data() && buffer < borrowed_.data() + borrowed_.size();
  }
  std::atomic<bool> sends_unregistered_{false};

  // Buffers submitted and not completed, plus closing_bit once close_async() started (then
  // submit() refuses). An atomic, not under idle_mutex_: every message changes it twice.
  static constexpr std::size_t closing_bit = std::size_t{1} << (sizeof(std::size_t) * 8 - 1);
  std::atomic<std::size_t> outstanding_{0};
  std::size_t outstanding() const noexcept { return outstanding_.load(std::memory_order_seq_cst) & ~closing_bit; }
  std::atomic<std::size_t> idle_waiters_{0};  // in wait_idle(); written under idle_mutex_

  std::mutex idle_mutex_;
  std::condition_variable idle_changed_;
  std::size_t lost_ = 0;                  // guarded by idle_mutex_: taken back from a dead connection
  std::size_t borrowed_outstanding_ = 0;  // guarded by idle_mutex_
  std::size_t borrowed_lost_ = 0;         // guarded by idle_mutex_
  bool close_finished_ = false;           // guarded by idle_mutex_
  std::optional<Error> close_result_;     // guarded by idle_mutex_
};

}  // namespace netio::detail
