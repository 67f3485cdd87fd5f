// SPDX-License-Identifier: MIT
// The connection state of a user-level send socket, shared between the loop thread (which
// learns the outcome) and user threads (which wait for it). Thread-safe.
#pragma once

#include "netio/endpoint.hpp"
#include "netio/error.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <atomic>
#include <mutex>
#include <optional>

namespace netio::detail {

class SendConnectionState {
 public:
  void set_connected(std::size_t peer_max_buffer_size);
  void set_failed(const Error& error);  // the first failure wins

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
  std::atomic<bool> failed_{false};  // mirrors error_.has_value(): the hot path reads only this
};

}  // namespace netio::detail
