// SPDX-License-Identifier: MIT
// The connection state of a user-level send socket, shared between the loop thread (which
// learns the outcome) and user threads (which wait for it). Thread-safe.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

namespace netio::detail {

class SendConnectionState {
 public:
  void set_connected(std::size_t peer_max_buffer_size);
  // The first failure wins. Returns whether a caller blocked in wait_connected() takes it
  // (it will throw it): then the failure has been said, and nobody needs to log it.
  bool set_failed(const Error& error);
  // Whether the failure was thrown to a caller (throw_if_failed(), wait_connected()).
  bool failure_told() const noexcept { return told_.load(std::memory_order_acquire); }
  // failure() for the socket's owner (the public failure() accessors): it is told.
  std::optional<Error> tell_failure() const;

  bool connected() const;
  std::size_t peer_max_buffer_size() const;  // 0 until connected
  // Throws the failure, if there was one.
  void throw_if_failed() const;
  std::optional<Error> failure() const;
  // True once connected, false on timeout; throws the failure.
  bool wait_connected(std::chrono::nanoseconds timeout) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  // Written under mutex_ (for the waiters), read without it: every send asks both.
  std::atomic<bool> connected_{false};
  std::atomic<std::size_t> peer_max_buffer_size_{0};
  std::optional<Error> error_;
  mutable int waiting_ = 0;                // callers in wait_connected(), under mutex_
  mutable std::atomic<bool> told_{false};  // the failure was thrown to a caller
  std::atomic<bool> failed_{false};        // mirrors error_.has_value(): the hot path reads only this
};

}  // namespace netio::detail
