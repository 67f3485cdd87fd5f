// SPDX-License-Identifier: MIT
#include "reply_receiver.hpp"

#include "current_exception.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include <memory>

namespace netio::detail {

ReplyReceiver::ReplyReceiver(ReplyOptions options, std::string remote)
    : options_(std::move(options)), remote_(std::move(remote)) {}

void ReplyReceiver::deliver(ReceivedBuffer reply) {
  if (options_.on_reply) {
    try {
      options_.on_reply(reply.bytes());
    } catch (...) {
      log(LogLevel::error, "send socket to {}: the reply handler threw: {}", remote_, current_exception_text());
    }
    return;  // the buffer, and its credit, go back here
  }
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(reply));
  }
  changed_.notify_one();
}

std::optional<Message> ReplyReceiver::recv(std::chrono::nanoseconds timeout) {
  if (options_.on_reply) {
    throw Error(Errc::invalid_option, "recv_reply() on a send socket whose replies go to its on_reply callback");
  }
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [this] { return !queue_.empty() || closed_; }) || queue_.empty()) {
    return std::nullopt;
  }
  auto held = std::make_shared<ReceivedBuffer>(std::move(queue_.front()));
  queue_.pop_front();
  lock.unlock();
  const auto bytes = held->bytes();
  return Message(bytes, std::move(held));
}

void ReplyReceiver::close() noexcept {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace netio::detail
