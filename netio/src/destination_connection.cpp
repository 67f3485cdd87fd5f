// SPDX-License-Identifier: MIT
#include "destination_connection.hpp"

namespace netio::detail {

DestinationConnection::DestinationConnection(Context& context, const Endpoint& destination,
                                             const MultiDestinationSendOptions& options,
                                             std::shared_ptr<PagePool> pages) {
  // A destination torn down and opened again must not see the new connection overtake the
  // old one's last messages: its close ends only once the receiver has read them. A refused
  // destination fails at once: the connection manager retries it (failed_peer_retry).
  if (options.mode == SendMode::low_latency) {
    LowLatencySendOptions o = options.low_latency;
    o.close_awaits_receiver = true;
    o.connect_timeout = connect_once;
    low_latency_ = std::make_unique<LowLatencySendSocket>(context, destination, o);
  } else {
    HighThroughputSendOptions o = options.high_throughput;
    o.close_awaits_receiver = true;
    o.connect_timeout = connect_once;
    if (pages) o.shared_pages = std::move(pages);
    high_throughput_ = std::make_unique<HighThroughputSendSocket>(context, destination, o);
  }
}

bool DestinationConnection::send(std::span<const std::span<const std::byte>> parts, bool wait) {
  if (low_latency_) {
    if (!wait) return low_latency_->try_send_parts(parts);
    low_latency_->send_parts(parts);
    return true;
  }
  if (!wait) return high_throughput_->try_send_parts(parts);
  high_throughput_->send_parts(parts);
  return true;
}

bool DestinationConnection::connected() const noexcept {
  return low_latency_ ? low_latency_->connected() : high_throughput_->connected();
}

std::optional<Error> DestinationConnection::failure() const {
  return low_latency_ ? low_latency_->failure() : high_throughput_->failure();
}

void DestinationConnection::flush() {
  if (high_throughput_) high_throughput_->flush();
}

void DestinationConnection::close(std::function<void(const Error*)> on_closed) {
  if (low_latency_)
    low_latency_->close(std::move(on_closed));
  else
    high_throughput_->close(std::move(on_closed));
}

void DestinationConnection::abort(std::string_view reason) {
  if (low_latency_)
    low_latency_->abort(reason);
  else
    high_throughput_->abort(reason);
}

std::size_t DestinationConnection::buffer_bytes() const {
  return low_latency_ ? low_latency_->buffer_bytes() : high_throughput_->buffer_bytes();
}

}  // namespace netio::detail
