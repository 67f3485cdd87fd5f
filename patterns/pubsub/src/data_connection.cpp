#include "data_connection.hpp"

#include "netio/log.hpp"

namespace netio::pubsub::detail {

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control)
    : subscriber_(std::move(subscriber)), control_(std::move(control)) {}

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<LowLatencySendSocket> socket)
    : subscriber_(std::move(subscriber)), control_(std::move(control)), low_latency_(std::move(socket)) {}

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control,
                               std::unique_ptr<HighThroughputSendSocket> socket)
    : subscriber_(std::move(subscriber)), control_(std::move(control)), high_throughput_(std::move(socket)) {}

// The socket was closed asynchronously first (close()), so destroying it waits for nothing,
// on whichever thread drops the last reference.
DataConnection::~DataConnection() { close(); }

template <typename Send>
Delivery DataConnection::guarded(Send send) {
  if (closed()) return Delivery::gone;
  try {
    return send() ? Delivery::sent : Delivery::full;
  } catch (const Error& e) {
    if (e.code() == Errc::timeout || e.code() == Errc::would_block || e.code() == Errc::message_too_large) throw;
    // The subscriber vanished (or the connection was closed under us): its control
    // connection's end removes it; until then it is skipped. Logged once.
    if (!failure_logged_.exchange(true)) {
      log(LogLevel::info, "publish: subscriber {} at {} is gone: {}", subscriber_.name, subscriber_.endpoint.to_string(),
          e.what());
    }
    return Delivery::gone;
  }
}

Delivery DataConnection::try_deliver(std::span<const std::span<const std::byte>> frame) {
  return guarded([&] {
    if (high_throughput_) return high_throughput_->try_send_parts(frame);
    if (low_latency_) return low_latency_->try_send_parts(frame);
    throw Error(Errc::closed, "no socket");
  });
}

Delivery DataConnection::deliver(std::span<const std::span<const std::byte>> frame) {
  return guarded([&] {
    if (high_throughput_) {
      high_throughput_->send_parts(frame);
      return true;
    }
    if (low_latency_) {
      low_latency_->send_parts(frame);
      return true;
    }
    throw Error(Errc::closed, "no socket");
  });
}

void DataConnection::flush() {
  if (closed() || !high_throughput_) return;
  try {
    high_throughput_->flush();
  } catch (const Error&) {
    // A connection that failed has nothing to flush; its subscriber is being removed.
  }
}

std::optional<Error> DataConnection::failure() const {
  if (high_throughput_) return high_throughput_->failure();
  if (low_latency_) return low_latency_->failure();
  return std::nullopt;
}

bool DataConnection::connected() const noexcept {
  if (high_throughput_) return high_throughput_->connected();
  if (low_latency_) return low_latency_->connected();
  return false;
}

void DataConnection::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  if (high_throughput_) high_throughput_->close();
  if (low_latency_) low_latency_->close();
}

}  // namespace netio::pubsub::detail

namespace netio::pubsub::detail {

void DataConnection::close_and_wait() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  // A send socket destroyed on a user thread without close() flushes and waits.
  high_throughput_.reset();
  low_latency_.reset();
}

}  // namespace netio::pubsub::detail
