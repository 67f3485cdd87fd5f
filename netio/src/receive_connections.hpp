// What both user-level receive sockets share: a listen socket, the hello check, and the
// set of accepted connections, each known by a number. A connection's first buffer is its
// sender's introduction (introduction.hpp): it gives the connection its Peer, and only then
// is the connection reported connected and its buffers handed on.
//
// Callbacks run on the loop thread. drop() and local_endpoint() may be called from any
// thread. close() (loop thread) ends every callback at once but destroys nothing, so that
// it may run inside one of them; the destructor closes too (on the loop thread) and
// destroys the back-end sockets, so it must not run inside one of their callbacks.
#pragma once

#include "handshake.hpp"
#include "peer_state.hpp"
#include "netio/backend.hpp"
#include "netio/connection_events.hpp"
#include "netio/context.hpp"
#include "netio/stats.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace netio::detail {

class ReceiveConnections {
 public:
  struct Callbacks {
    // Decides on a well-formed hello of the expected kind; may throw netio::Error to reject.
    std::function<AcceptDecision(const Hello&)> decide;
    std::function<void(const std::shared_ptr<const PeerState>& peer, ReceivedBuffer buffer)> on_data;
    std::function<void(std::uint64_t connection, const Error& error)> on_disconnected;
  };

  // `reply_window`: replies queued per connection at most (ReplySender).
  ReceiveConnections(Context& context, const Endpoint& local, SocketKind expected, std::string_view receiver_kind,
                     Callbacks callbacks, ConnectionEvents events, StatsCounters& stats, std::size_t reply_window);
  ~ReceiveConnections();
  ReceiveConnections(const ReceiveConnections&) = delete;
  ReceiveConnections& operator=(const ReceiveConnections&) = delete;

  Endpoint local_endpoint() const { return local_; }
  EventLoop& loop() noexcept { return loop_; }
  // Disconnects a peer that broke the protocol; logged with `why`. Any thread.
  void drop(std::uint64_t connection, const std::string& why);
  // Closes the listener and every connection: no callback runs after this. Loop thread
  // (or once the loop has stopped); idempotent.
  void close() noexcept;

 private:
  struct Connection {
    std::unique_ptr<LowLevelReceiveSocket> socket;
    Endpoint peer;
    std::shared_ptr<ReplySender> replies;
    std::shared_ptr<const PeerState> state;  // set by the introduction
    // Reported disconnected (and counted): by the socket's own end, a refused introduction
    // or drop(), whichever came first; the others then find nothing left to report.
    bool gone = false;
  };

  AcceptDecision on_request(const Endpoint& peer, std::span<const std::byte> hello);
  void on_accepted(std::unique_ptr<LowLevelReceiveSocket> socket);
  void on_data(std::uint64_t id, Connection& connection, ReceivedBuffer buffer);
  void on_introduction(std::uint64_t id, Connection& connection, std::span<const std::byte> bytes);
  static void close_connection(Connection& connection) noexcept;
  void forget_later(std::uint64_t connection);
  void report_disconnect(std::uint64_t connection, const Connection& state, const Error& error);
  // Runs a ConnectionEvents handler: whatever it throws is logged, never thrown on.
  template <typename Call>
  void notify(const char* event, const Endpoint& peer, Call call) noexcept;

  EventLoop& loop_;
  SocketKind expected_;
  std::string receiver_kind_;
  Callbacks callbacks_;
  ConnectionEvents events_;
  StatsCounters& stats_;
  std::size_t reply_window_;
  std::unique_ptr<LowLevelListenSocket> listener_;  // loop thread only
  Endpoint local_;
  std::map<std::uint64_t, Connection> connections_;  // loop thread only
  std::uint64_t next_id_ = 1;
  // Tasks this object posts hold a weak_ptr to this: a callback can post one after the
  // destructor's run_sync() was queued, so FIFO order alone does not protect them.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace netio::detail
