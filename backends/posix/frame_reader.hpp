// SPDX-License-Identifier: MIT
// Reads frames (an 8-byte little-endian length, then the bytes) from a non-blocking TCP
// socket into buffers of a bounded pool and lends each to its owner as a ReceivedBuffer.
// Both directions of a connection use one: data at the receive socket, replies at the send
// socket.
//
// Reading goes through a staging buffer, so one recv() picks up many small frames; the
// bulk of a large frame is read straight into its own buffer.
//
// While the rest of a large frame is awaited, the socket's SO_RCVLOWAT is that rest: poll
// reports the socket readable once the frame is all in, not once per arriving segment (16
// times for a 1 MiB page on loopback, each a wake-up the sender pays for under a lock). A
// reader that stops before the kernel is drained lowers it first, so bytes that are there
// are always reported. A non-blocking recv() ignores it (busy polling reads as before).
//
// When every buffer is lent out the reader stalls (its owner stops polling the descriptor
// for input), TCP's window closes, and the peer feels back-pressure; a buffer given back (on
// any thread) resumes it through a task posted to the loop.
//
// Loop thread only, except that lent buffers may be given back on any thread. The owner
// keeps the descriptor and its registration with the loop.
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/backend/event_loop.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace netio::posix {

class ReceiveBufferPool;

class FrameReader {
 public:
  struct Callbacks {
    std::function<void(ReceivedBuffer)> on_frame;
    // The reader stalled (true: stop polling for input) or may read again (false).
    std::function<void(bool stalled)> on_stall_changed;
    // The peer closed, the connection broke, or a frame was larger than allowed; the reader
    // has stopped. `code` is Errc::disconnected or Errc::protocol_error.
    std::function<void(Errc code, const std::string& why)> on_failed;
  };

  // `link` names the connection in messages ("from A to B"), `peer` the other side.
  FrameReader(EventLoop& loop, std::size_t max_frame, std::size_t credits, std::string peer, std::string link);
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  void start(int fd, Callbacks callbacks);
  // Reads what is there (a bounded number of reads, then others get the loop).
  void on_readable();
  bool stalled() const noexcept { return stalled_; }
  // Part of a frame is in (its header or some of its bytes) and the rest is not.
  bool mid_frame() const noexcept { return current_ != nullptr || have_header_ || staged_begin_ != staged_end_; }
  // Bytes held for received data: the staging buffer and the frame buffers allocated so far.
  std::size_t bytes_held() const noexcept;
  // Frames handed on since start().
  std::uint64_t frames_delivered() const noexcept { return frames_delivered_; }
  // The errno of the read that failed the reader (ECONNRESET: the peer reset the
  // connection), 0 when it ended otherwise (end of file, a protocol error) or has not.
  int failure_errno() const noexcept { return failure_errno_; }
  // The connection carries traffic the other way too (replies, or the data beside them):
  // read with one recv() instead of peeking first (see read_once()).
  void stop_peeking() noexcept { peek_ = false; }
  // No callback after this; lent buffers stay valid. Idempotent.
  void close() noexcept;

 private:
  // would_block: the kernel had no more bytes (a recv() said so, or returned less than it
  // was offered room for); poll reports the socket again when more come (level-triggered).
  enum class Step { progress, would_block, stalled, done };

  Step read_once();
  // Sets SO_RCVLOWAT for what the reader awaits now (raising it only when `may_raise`).
  void set_low_watermark(bool may_raise);
  bool discard_peeked(std::byte* peeked, std::size_t bytes);
  bool consume_staged();  // false when stalled for lack of buffers or closed
  void deliver();
  void resume();
  void fail(Errc code, const std::string& why);

  EventLoop& loop_;
  std::size_t max_frame_;
  std::string peer_;
  std::string link_;
  int fd_ = -1;
  Callbacks callbacks_;
  std::shared_ptr<ReceiveBufferPool> pool_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // liveness token for posted wake-ups
  bool closed_ = false;
  bool stalled_ = false;
  bool peek_ = true;

  std::vector<std::byte> staging_;
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  Buffer* current_ = nullptr;  // the frame being filled
  std::size_t expected_ = 0;   // its length
  bool have_header_ = false;
  std::size_t low_watermark_ = 1;  // the socket's SO_RCVLOWAT (1: the kernel's default)
  int failure_errno_ = 0;
  std::uint64_t frames_delivered_ = 0;
};

}  // namespace netio::posix
