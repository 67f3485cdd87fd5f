#include "receive_connections.hpp"

#include "netio/log.hpp"

#include <fmt/format.h>

namespace netio::detail {

ReceiveConnections::ReceiveConnections(Context& context, const Endpoint& local, SocketKind expected,
                                       std::string_view receiver_kind, Callbacks callbacks, ConnectionEvents events,
                                       StatsCounters& stats)
    : loop_(context.loop()),
      expected_(expected),
      receiver_kind_(receiver_kind),
      callbacks_(std::move(callbacks)),
      events_(std::move(events)),
      stats_(stats) {
  Backend& backend = context.backend(local.transport);
  loop_.run_sync([&] {
    listener_ = backend.make_listen_socket();
    LowLevelListenSocket::Callbacks listen_callbacks;
    listen_callbacks.on_request = [this](const Endpoint& peer, std::span<const std::byte> hello) {
      return on_request(peer, hello);
    };
    listen_callbacks.on_accepted = [this](std::unique_ptr<LowLevelReceiveSocket> socket) {
      on_accepted(std::move(socket));
    };
    listen_callbacks.on_error = [this](const Error& error) {
      log(LogLevel::warn, "receive socket {}: {}", local_.to_string(), error.what());
    };
    listener_->listen(local, std::move(listen_callbacks));
    local_ = listener_->local_endpoint();
  });
}

ReceiveConnections::~ReceiveConnections() {
  loop_.run_sync([this] {
    close();
    connections_.clear();
    listener_.reset();
  });
}

void ReceiveConnections::close() noexcept {
  alive_.reset();  // tasks posted by callbacks that ran just before this one see it
  if (listener_) listener_->close();
  for (auto& [id, connection] : connections_) connection.socket->close();
}

AcceptDecision ReceiveConnections::on_request(const Endpoint& peer, std::span<const std::byte> hello) {
  try {
    return callbacks_.decide(expect_hello(hello, expected_, receiver_kind_));
  } catch (const Error& e) {
    log(LogLevel::warn, "receive socket {}: rejecting {}: {}", local_.to_string(), peer.to_string(), e.what());
    return AcceptDecision::reject(e.what());
  }
}

void ReceiveConnections::on_accepted(std::unique_ptr<LowLevelReceiveSocket> socket) {
  const std::uint64_t id = next_id_++;
  auto& connection = connections_[id];
  connection.peer = socket->peer();
  connection.socket = std::move(socket);
  stats_.connections().fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::debug, "receive socket {}: accepted {}", local_.to_string(), connection.peer.to_string());
  LowLevelReceiveSocket::Callbacks socket_callbacks;
  socket_callbacks.on_data = [this, id, peer = &connection.peer](ReceivedBuffer buffer) {
    callbacks_.on_data(id, *peer, std::move(buffer));
  };
  socket_callbacks.on_disconnected = [this, id, peer = &connection.peer](const Error& error) {
    report_disconnect(id, *peer, error);
    forget_later(id);
  };
  connection.socket->start(std::move(socket_callbacks));
  if (events_.on_connected) events_.on_connected(connection.peer);
}

void ReceiveConnections::report_disconnect(std::uint64_t connection, const Endpoint& peer, const Error& error) {
  stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  callbacks_.on_disconnected(connection, error);
  if (events_.on_disconnected) events_.on_disconnected(peer, error);
}

void ReceiveConnections::forget_later(std::uint64_t connection) {
  // Not from inside the socket's own callback: it may still be on the stack.
  loop_.post([this, connection, alive = std::weak_ptr<int>(alive_)] {
    if (!alive.expired()) connections_.erase(connection);
  });
}

void ReceiveConnections::drop(std::uint64_t connection, const std::string& why) {
  loop_.post([this, connection, why, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    const auto it = connections_.find(connection);
    if (it == connections_.end()) return;
    log(LogLevel::warn, "receive socket {}: disconnecting {}: {}", local_.to_string(), it->second.peer.to_string(), why);
    it->second.socket->close();
    report_disconnect(connection, it->second.peer,
                      Error(Errc::protocol_error, fmt::format("{}: {}", it->second.peer.to_string(), why)));
    connections_.erase(it);
  });
}

}  // namespace netio::detail
