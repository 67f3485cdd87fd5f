// SPDX-License-Identifier: MIT
// Writes whole buffers to a non-blocking TCP socket as frames (an 8-byte little-endian length,
// then the bytes), several per sendmsg() when they queue up, and tracks partial writes. Both
// directions of a connection use one: data from the send socket, replies from the receive
// socket.
//
// Loop thread only. The writer borrows each buffer from push() until it reports it written
// (on_written, in the order pushed) or until clear(); it never owns the descriptor.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "netio/backend/buffer.hpp"

namespace netio::posix {

class FrameWriter {
 public:
  enum class Result { done, would_block, failed };

  // Queues `buffer`; nothing is written until write().
  void push(Buffer* buffer);
  // Writes what the socket takes now, calling `on_written` for every buffer written whole
  // (which may push more: they are written in the same call). `failure` gets errno's text
  // on Result::failed. `keep_going` is checked after each callback: false stops at once
  // (the owner closed).
  Result write(int fd, const std::function<void(Buffer*)>& on_written, const std::function<bool()>& keep_going,
               std::string& failure);
  bool empty() const noexcept { return queue_.empty(); }
  // The size of the largest buffer queued (0 when none).
  std::size_t largest_queued() const noexcept;
  // Forgets every queued buffer (the caller owns them again) and returns them in order.
  std::vector<Buffer*> clear();

 private:
  struct Pending {
    Buffer* buffer;
    std::array<std::byte, 8> header;
  };
  std::deque<Pending> queue_;
  std::size_t head_offset_ = 0;  // bytes of queue_.front()'s frame already written
  bool writing_ = false;         // write() is on the stack
  std::vector<Buffer*> completed_;
  static constexpr std::size_t small_frame_limit = 2048;  // header included
  std::array<std::byte, small_frame_limit> stage_;
};

}  // namespace netio::posix
