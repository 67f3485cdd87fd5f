// SPDX-License-Identifier: MIT
#include "data_connection.hpp"

#include "netio/log.hpp"
#include "netio/printable.hpp"

namespace netio::pubsub::detail {

namespace {

// Errors that are back-pressure or the caller's, not the subscriber going away.
bool passes_through(const Error& e) {
  return e.code() == Errc::timeout || e.code() == Errc::would_block || e.code() == Errc::message_too_large;
}

}  // namespace

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control)
    : subscriber_(std::move(subscriber)), control_(std::move(control)) {}

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control, std::unique_ptr<LowLatencySendSocket> socket)
    : subscriber_(std::move(subscriber)), control_(std::move(control)), low_latency_(std::move(socket)) {}

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control,
                               std::unique_ptr<HighThroughputSendSocket> socket)
    : subscriber_(std::move(subscriber)), control_(std::move(control)), high_throughput_(std::move(socket)) {}

DataConnection::DataConnection(SubscriberInfo subscriber, Peer control,
                               std::shared_ptr<MultiDestinationSendSocket> connections)
    : subscriber_(std::move(subscriber)), control_(std::move(control)), limited_(std::move(connections)) {}

// The socket was closed asynchronously first (close()), so destroying it waits for nothing,
// on whichever thread drops the last reference.
DataConnection::~DataConnection() { close(); }

// The subscriber vanished (or the connection was closed under us): its control connection's
// end removes it; until then it is skipped. Logged once.
void DataConnection::gone(const Error& e) {
  if (!failure_logged_.exchange(true)) {
    log(LogLevel::info, "publish: subscriber {} at {} is gone: {}", printable(subscriber_.identity.name),
        printable(subscriber_.endpoint.to_string()), e.what());
  }
}

template <typename Send>
Delivery DataConnection::guarded(Send send) {
  if (closed()) return Delivery::gone;
  try {
    return send() ? Delivery::sent : Delivery::full;
  } catch (const Error& e) {
    if (passes_through(e)) throw;
    gone(e);
    return Delivery::gone;
  }
}

bool DataConnection::enter() {
  std::lock_guard lock(limited_mutex_);
  if (closed_.load(std::memory_order_acquire) || failure_) return false;
  ++active_;
  return true;
}

void DataConnection::leave() {
  bool disconnect = false;
  {
    std::lock_guard lock(limited_mutex_);
    --active_;
    if (active_ == 0 && closed_.load(std::memory_order_acquire) && !disconnected_) disconnect = disconnected_ = true;
  }
  if (disconnect) limited_->disconnect(subscriber_.endpoint);
}

// Under the limit. A failure is final for this connection, as a socket's own failure is: the
// subscriber is skipped from then on (a refused re-connect means it is gone), and the
// failure is kept for connect().
Delivery DataConnection::through_limit(std::span<const std::span<const std::byte>> frame, SendWait wait) {
  if (!enter()) return Delivery::gone;
  const Active active(*this);
  try {
    switch (limited_->send_parts(subscriber_.endpoint, frame, wait)) {
      case SendOutcome::sent: return Delivery::sent;
      case SendOutcome::no_room: return Delivery::full;
      case SendOutcome::no_connection: return Delivery::reconnecting;
    }
  } catch (const Error& e) {
    if (passes_through(e)) throw;
    {
      std::lock_guard lock(limited_mutex_);
      if (!failure_) failure_ = e;
    }
    gone(e);
  }
  return Delivery::gone;
}

Delivery DataConnection::try_deliver(std::span<const std::span<const std::byte>> frame) {
  if (limited_) return through_limit(frame, SendWait::nothing);
  return guarded([&] {
    if (high_throughput_) return high_throughput_->try_send_parts(frame);
    if (low_latency_) return low_latency_->try_send_parts(frame);
    throw Error(Errc::closed, "no socket");
  });
}

Delivery DataConnection::deliver(std::span<const std::span<const std::byte>> frame) {
  if (limited_) return through_limit(frame, SendWait::connection_and_room);
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

Delivery DataConnection::deliver_or_full(std::span<const std::span<const std::byte>> frame) {
  if (limited_) return through_limit(frame, SendWait::connection);
  return try_deliver(frame);  // a connection of its own is always there
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
  if (limited_) {
    std::lock_guard lock(limited_mutex_);
    return failure_;
  }
  return std::nullopt;
}

bool DataConnection::connect() {
  if (high_throughput_) return high_throughput_->connected();
  if (low_latency_) return low_latency_->connected();
  if (!limited_ || !enter()) return false;
  const Active active(*this);
  try {
    return limited_->try_connect(subscriber_.endpoint);
  } catch (const Error& e) {
    std::lock_guard lock(limited_mutex_);
    if (!failure_) failure_ = e;
  }
  return false;
}

void DataConnection::close() {
  if (limited_) {
    bool disconnect = false;
    {
      std::lock_guard lock(limited_mutex_);
      if (closed_.exchange(true, std::memory_order_acq_rel)) return;
      if (active_ == 0) disconnect = disconnected_ = true;
    }
    // What is queued for it goes out first; a later subscriber at this endpoint connects anew.
    if (disconnect) limited_->disconnect(subscriber_.endpoint);
    return;
  }
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  if (high_throughput_) high_throughput_->close();
  if (low_latency_) low_latency_->close();
}

void DataConnection::abort(std::string_view reason) {
  if (closed()) return;
  // Deliveries inside the limited socket wake to the failure; the disconnect that forgets it
  // follows once they are out (close()).
  if (limited_) limited_->abort(subscriber_.endpoint, reason);
  if (high_throughput_) high_throughput_->abort(reason);
  if (low_latency_) low_latency_->abort(reason);
  close();
}

void DataConnection::close_and_wait() {
  if (limited_) {
    close();  // the publisher's close of its MultiDestinationSendSocket waits for them all
    return;
  }
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  // A send socket destroyed on a user thread without close() flushes and waits.
  high_throughput_.reset();
  low_latency_.reset();
}

}  // namespace netio::pubsub::detail
