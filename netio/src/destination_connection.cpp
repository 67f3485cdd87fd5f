#include "destination_connection.hpp"

namespace netio::detail {

DestinationConnection::DestinationConnection(Context& context, const Endpoint& destination,
                                             const MultiDestinationSendOptions& options) {
  if (options.mode == SendMode::low_latency) {
    low_latency_ = std::make_unique<LowLatencySendSocket>(context, destination, options.low_latency);
  } else {
    high_throughput_ = std::make_unique<HighThroughputSendSocket>(context, destination, options.high_throughput);
  }
}

bool DestinationConnection::send(std::span<const std::byte> message, bool wait) {
  if (low_latency_) {
    if (!wait) return low_latency_->try_send(message);
    low_latency_->send(message);
    return true;
  }
  if (!wait) return high_throughput_->try_send(message);
  high_throughput_->send(message);
  return true;
}

void DestinationConnection::flush() {
  if (high_throughput_) high_throughput_->flush();
}

void DestinationConnection::close(std::function<void(const Error*)> on_closed) {
  if (low_latency_) low_latency_->close(std::move(on_closed));
  else high_throughput_->close(std::move(on_closed));
}

std::size_t DestinationConnection::buffer_bytes() const {
  return low_latency_ ? low_latency_->buffer_bytes() : high_throughput_->buffer_bytes();
}

}  // namespace netio::detail
