#include "receive_connections.hpp"

#include "current_exception.hpp"

#include "introduction.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <utility>

namespace netio::detail {

ReceiveConnections::ReceiveConnections(Context& context, const Endpoint& local, SocketKind expected,
                                       std::string_view receiver_kind, Callbacks callbacks, ConnectionEvents events,
                                       StatsCounters& stats, std::size_t reply_window)
    : loop_(context.loop()),
      expected_(expected),
      receiver_kind_(receiver_kind),
      callbacks_(std::move(callbacks)),
      events_(std::move(events)),
      stats_(stats),
      reply_window_(reply_window) {
  Backend& backend = context.backend(local);
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
  for (auto& [id, connection] : connections_) close_connection(connection);
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
  const std::uint64_t id = next_connection_id();
  auto& connection = connections_[id];
  connection.peer = socket->peer();
  connection.socket = std::move(socket);
  connection.replies = std::make_shared<ReplySender>(loop_, *connection.socket, reply_window_,
                                                     connection.peer.to_string());
  stats_.connections().fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::debug, "receive socket {}: accepted {}", local_.to_string(), connection.peer.to_string());
  LowLevelReceiveSocket::Callbacks socket_callbacks;
  // `connection` stays at its address: std::map nodes do not move, and the socket (whose
  // callbacks these are) goes before the node.
  socket_callbacks.on_data = [this, id, c = &connection](ReceivedBuffer buffer) { on_data(id, *c, std::move(buffer)); };
  socket_callbacks.on_disconnected = [this, id, c = &connection](const Error& error) {
    if (std::exchange(c->gone, true)) return;
    c->replies->close();
    if (c->state) report_disconnect(id, *c, error);
    else stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
    forget_later(id);
  };
  socket_callbacks.on_reply_completed = [c = &connection](Buffer* buffer) { c->replies->on_completed(buffer); };
  connection.socket->start(std::move(socket_callbacks));
}

void ReceiveConnections::on_data(std::uint64_t id, Connection& connection, ReceivedBuffer buffer) {
  if (connection.state) {
    callbacks_.on_data(connection.state, std::move(buffer));
    return;
  }
  on_introduction(id, connection, buffer.bytes());
}

void ReceiveConnections::on_introduction(std::uint64_t id, Connection& connection, std::span<const std::byte> bytes) {
  auto state = std::make_shared<PeerState>();
  state->connection = id;
  state->address = connection.peer;
  state->replies = connection.replies;
  try {
    state->identity = decode_introduction(bytes);
  } catch (const Error& e) {
    // Inside the socket's own callback: it may be closed here, not destroyed.
    log(LogLevel::warn, "receive socket {}: disconnecting {}: {}", local_.to_string(), connection.peer.to_string(),
        e.what());
    connection.gone = true;
    close_connection(connection);
    stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
    forget_later(id);
    return;
  }
  connection.state = std::move(state);
  log(LogLevel::debug, "receive socket {}: {} introduced itself as '{}'", local_.to_string(),
      connection.peer.to_string(), connection.state->identity.name);
  if (events_.on_connected) notify("on_connected", connection.peer, [&] { events_.on_connected(Peer(connection.state)); });
}

template <typename Call>
void ReceiveConnections::notify(const char* event, const Endpoint& peer, Call call) noexcept {
  try {
    call();
  } catch (...) {  // user code: whatever it throws, the connection's bookkeeping goes on
    log(LogLevel::error, "receive socket {}: the {} handler threw for {}: {}", local_.to_string(), event,
        peer.to_string(), current_exception_text());
  }
}

void ReceiveConnections::close_connection(Connection& connection) noexcept {
  connection.socket->close();
  connection.replies->close();  // after the socket: it gave every reply buffer back
}

void ReceiveConnections::report_disconnect(std::uint64_t connection, const Connection& state, const Error& error) {
  stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  callbacks_.on_disconnected(connection, error);
  if (events_.on_disconnected) {
    notify("on_disconnected", state.peer, [&] { events_.on_disconnected(Peer(state.state), error); });
  }
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
    // Gone already: its end of file was read after the fault that asked for the drop, in
    // the same round, and was reported then.
    if (it == connections_.end() || it->second.gone) return;
    it->second.gone = true;
    log(LogLevel::warn, "receive socket {}: disconnecting {}: {}", local_.to_string(), it->second.peer.to_string(), why);
    close_connection(it->second);
    if (it->second.state) {
      report_disconnect(connection, it->second,
                        Error(Errc::protocol_error, fmt::format("{}: {}", it->second.peer.to_string(), why)));
    } else {
      stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
    }
    connections_.erase(it);
  });
}

}  // namespace netio::detail
