// SPDX-License-Identifier: MIT
// The replies a send socket receives on its connection: handed to the user's callback on
// the loop thread, or queued for recv_reply(). Either way each reply holds one of the
// connection's reply credits until the callback returns or the Message taken from the queue
// is released: a user who does not take replies stops the connection taking more, which
// back-pressures the replier instead of growing memory here.
//
// Thread-safety: deliver() and close() on the loop thread; recv() from any thread.
#pragma once

#include "netio/backend/backend.hpp"
#include "netio/message.hpp"
#include "netio/peer.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace netio::detail {

class ReplyReceiver {
 public:
  ReplyReceiver(ReplyOptions options, std::string remote);

  const ReplyOptions& options() const noexcept { return options_; }
  void deliver(ReceivedBuffer reply);  // loop thread
  // The next queued reply, waiting up to `timeout`; std::nullopt on timeout or once the
  // connection is closed and the queue empty. Only when no on_reply callback is set.
  std::optional<Message> recv(std::chrono::nanoseconds timeout);
  void close() noexcept;  // wakes recv() callers

 private:
  ReplyOptions options_;
  std::string remote_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ReceivedBuffer> queue_;  // guarded by mutex_; bounded by the reply credits
  bool closed_ = false;               // guarded by mutex_
};

}  // namespace netio::detail
