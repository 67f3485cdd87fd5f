// SPDX-License-Identifier: MIT
#include "send_connection_state.hpp"

#include <fmt/format.h>

namespace netio::detail {

void SendConnectionState::set_connected(std::size_t peer_max_buffer_size) {
  {
    std::lock_guard lock(mutex_);
    if (error_) return;
    peer_max_buffer_size_.store(peer_max_buffer_size, std::memory_order_relaxed);
    connected_.store(true, std::memory_order_release);
  }
  changed_.notify_all();
}

bool SendConnectionState::set_failed(const Error& error) {
  bool taken = false;
  {
    std::lock_guard lock(mutex_);
    if (error_) return false;
    error_ = error;
    connected_.store(false, std::memory_order_release);
    failed_.store(true, std::memory_order_release);
    // A waiter checks error_ under mutex_ when it wakes, even on its timeout: it throws this.
    taken = waiting_ > 0;
  }
  changed_.notify_all();
  return taken;
}

bool SendConnectionState::connected() const { return connected_.load(std::memory_order_acquire); }

std::size_t SendConnectionState::peer_max_buffer_size() const {
  return peer_max_buffer_size_.load(std::memory_order_acquire);
}

void SendConnectionState::throw_if_failed() const {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  if (error_) {
    told_.store(true, std::memory_order_release);
    throw *error_;
  }
}

std::optional<Error> SendConnectionState::failure() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::optional<Error> SendConnectionState::tell_failure() const {
  std::lock_guard lock(mutex_);
  if (error_) told_.store(true, std::memory_order_release);
  return error_;
}

bool SendConnectionState::wait_connected(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mutex_);
  ++waiting_;
  changed_.wait_for(lock, timeout, [this] { return connected_.load(std::memory_order_relaxed) || error_.has_value(); });
  --waiting_;
  if (error_) {
    told_.store(true, std::memory_order_release);
    throw *error_;
  }
  return connected_.load(std::memory_order_relaxed);
}

}  // namespace netio::detail
