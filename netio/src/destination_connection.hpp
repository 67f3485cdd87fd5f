// SPDX-License-Identifier: MIT
// One destination's connection of a MultiDestinationSendSocket: a low-latency or a
// high-throughput send socket behind one small interface, so the connection manager does
// not care which.
// Thread-safety: as the socket it wraps (every method from any thread).
// Lifetime: close() may be followed by destruction at any time; the close goes on.
#pragma once

#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/multi_destination_send_socket.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace netio::detail {

class DestinationConnection {
 public:
  // Starts connecting (returns at once; messages sent meanwhile wait in the socket). A
  // high-throughput connection draws from `pages` when given (else as its options say).
  DestinationConnection(Context& context, const Endpoint& destination, const MultiDestinationSendOptions& options,
                        std::shared_ptr<PagePool> pages = nullptr);

  // send_parts() when `wait`, else try_send_parts(): false when the socket has no room now.
  bool send(std::span<const std::span<const std::byte>> parts, bool wait);
  bool connected() const noexcept;
  std::optional<Error> failure() const;
  void flush();  // high-throughput: the partly filled page; low-latency: nothing to do
  // Flushes what is queued, awaits its completions, closes; on_closed on the loop thread.
  void close(std::function<void(const Error*)> on_closed);
  // The socket's abort(): closes now, dropping what is queued; waiting senders fail.
  void abort(std::string_view reason);
  std::size_t buffer_bytes() const;

 private:
  std::unique_ptr<LowLatencySendSocket> low_latency_;
  std::unique_ptr<HighThroughputSendSocket> high_throughput_;
};

}  // namespace netio::detail
