// SPDX-License-Identifier: MIT
// What both user-level receive sockets share: a listen socket, the hello check, and the
// set of accepted connections, each known by a number. A connection's first buffer is its
// sender's introduction (introduction.hpp): it gives the connection its Peer, and only then
// is the connection reported connected and its buffers handed on.
//
// Admission (netio/socket_options.hpp), the same on every back-end: the hello of a peer outside
// the allow-list, beyond max_connections, or without the listener's key is rejected with a
// reason; with a key, the accept answers the sender's challenge and the introduction must
// carry the sender's proof (authentication.hpp). A connection accepted but not introduced
// within the handshake timeout is dropped, and when more than max_pending_handshakes wait
// for their introduction the oldest is dropped. With an idle timeout, introduced
// connections that deliver nothing for that long are dropped (one sweep timer). Replies are
// bounded by the receiver: a sender's declared reply size is clamped to max_reply_size (in
// the AcceptDecision, so that the back-ends size their reply buffers by it), queued replies
// count against the budget (ReplySender), and a peer that takes none of them for the reply
// timeout is dropped (a second sweep timer).
//
// Callbacks run on the loop thread. drop() and local_endpoint() may be called from any
// thread. close() (loop thread) ends every callback at once but destroys nothing, so that
// it may run inside one of them; the destructor closes too (on the loop thread) and
// destroys the back-end sockets, so it must not run inside one of their callbacks.
#pragma once

#include "authentication.hpp"
#include "budget_charge.hpp"
#include "handshake.hpp"
#include "misbehaviour_cooldown.hpp"
#include "netio/backend/backend.hpp"
#include "netio/context.hpp"
#include "netio/log.hpp"
#include "netio/socket_options.hpp"
#include "peer_state.hpp"
#include "rejection_log.hpp"
#include "stats_counters.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace netio::detail {

// What a connection is charged from its handshake until its buffers fill, on a back-end
// whose receive buffers hold memory as bytes arrive (TCP: its 64 KiB staging buffer;
// libfabric without pinning: its endpoint and the pages an introduction writes).
constexpr std::size_t idle_connection_charge = 64 * 1024;

class ReceiveConnections {
 public:
  struct Callbacks {
    // Decides on a well-formed hello of the expected kind; may throw netio::Error to reject.
    std::function<AcceptDecision(const Hello&)> decide;
    std::function<void(const std::shared_ptr<const PeerState>& peer, ReceivedBuffer buffer)> on_data;
    std::function<void(std::uint64_t connection, const Error& error)> on_disconnected;
  };

  // `reply_window`: replies queued per connection at most (ReplySender). `budget` counts what
  // every accepted connection holds (netio/receive_budget.hpp):
  // - on a back-end whose receive buffers hold memory as bytes arrive (TCP; libfabric's
  //   posted buffers unless pinned), idle_charge at the handshake, then the socket's
  //   bytes_held() as its buffers are first filled; a connection whose buffers cannot grow
  //   within the budget is dropped with the reason;
  // - on one that holds them from the accept (libfabric on verbs), credits × the largest buffer, plus,
  //   with `reassembly_buffer`, one buffer more for joining a message that spans two of them
  //   (PeerState::reassembly_allowance); a connection that does not fit whole gets fewer
  //   credits.
  // When a newcomer does not fit (the budget, max_connections, or the process's descriptors:
  // the listener's on_out_of_descriptors), connections that have sent no data since their
  // introduction are evicted first: unintroduced ones oldest first, then introduced ones idle
  // longest first (with a key, an introduced peer proved it and is not evicted); only when
  // none is left is the newcomer cut, rejected with the reason, or left in the backlog.
  // Throws netio::Error when the endpoint cannot be bound, or for a key this build cannot use.
  ReceiveConnections(Context& context, const Endpoint& local, SocketKind expected, std::string_view receiver_kind,
                     Callbacks callbacks, ConnectionEvents events, StatsCounters& stats, std::size_t reply_window,
                     std::shared_ptr<ReceiveBudget> budget, bool reassembly_buffer, AdmissionOptions admission = {});
  ~ReceiveConnections();
  ReceiveConnections(const ReceiveConnections&) = delete;
  ReceiveConnections& operator=(const ReceiveConnections&) = delete;

  Endpoint local_endpoint() const { return local_; }
  EventLoop& loop() noexcept { return loop_; }
  // The replies queued on every connection, not yet sent (ReplySender); any thread.
  std::shared_ptr<const std::atomic<std::uint64_t>> replies_queued() const noexcept { return replies_queued_; }
  // Whether the Context this was made from was destroyed (the socket's calls throw Errc::closed).
  bool context_gone() const noexcept { return detail::context_gone(context_); }
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
    BudgetCharge buffers;  // its receive buffers, counted against the budget until it is forgotten
    std::size_t reassembly_allowance = 0;
    EventLoop::TimerId handshake_timer = 0;                    // until the introduction
    std::optional<std::pair<AuthNonce, AuthNonce>> challenge;  // (sender's, listener's) nonce, with a key
    std::chrono::steady_clock::time_point last_data{};         // for the idle timeout and evictions
    bool delivered = false;  // data came after the introduction: not evicted for a newcomer
  };
  // Buffers counted for an accepted handshake whose connection has not been handed over
  // yet (libfabric: until the connection is established).
  struct PendingCharge {
    std::string peer;
    BudgetCharge charge;
    std::size_t reassembly_allowance = 0;
    std::chrono::steady_clock::time_point since;
  };

  // A challenge answered in an accept, until the connection arrives (on_accepted).
  struct AnsweredChallenge {
    AuthNonce sender_nonce;
    AuthNonce listener_nonce;
    std::chrono::steady_clock::time_point answered;
  };

  AcceptDecision on_request(const Endpoint& peer, std::span<const std::byte> hello);
  AcceptDecision admit(const Endpoint& peer, const Hello& hello);
  AcceptDecision fit_to_budget(const Endpoint& peer, AcceptDecision decision);
  // Evicts silent connections (see the constructor), except `keep`, until `bytes` of the
  // budget are available (or, with bytes 0, one connection); whether that was reached.
  bool evict_silent(std::size_t bytes, const std::string& why, std::uint64_t keep = 0);
  // On a back-end that allocates as bytes arrive: charges what the connection holds now.
  // False when that does not fit even after evictions (the caller drops the connection).
  bool charge_held(std::uint64_t id, Connection& connection);
  // Closes and reports a connection from inside its own socket's callback (it is forgotten
  // later, not destroyed here).
  void drop_in_callback(std::uint64_t id, Connection& connection, const std::string& why);
  void claim_charge(Connection& connection);
  std::size_t live_connections() const;
  void expect_introduction(std::uint64_t id, Connection& connection);
  // Checks and strips the authentication block; throws Errc::handshake_rejected.
  std::span<const std::byte> authenticated(const Connection& connection, std::span<const std::byte> bytes) const;
  void sweep_idle();
  // Drops the peers that took none of their queued replies for the reply timeout.
  void sweep_unread_replies();
  // Closes, reports and forgets a connection; loop thread, outside its socket's callbacks.
  void drop_now(std::uint64_t connection, const std::string& why, LogLevel level = LogLevel::warn);
  // A peer disconnected for misbehaving: held off for a while where it is one process.
  void offended(const Endpoint& peer, const std::string& why);
  // The refusal of a peer held off (AcceptDecision::answer_after set), or nullopt.
  std::optional<AcceptDecision> held_off(const Endpoint& peer);
  void on_accepted(std::unique_ptr<LowLevelReceiveSocket> socket);
  void on_data(std::uint64_t id, Connection& connection, ReceivedBuffer buffer);
  void on_introduction(std::uint64_t id, Connection& connection, std::span<const std::byte> bytes);
  static void close_connection(Connection& connection) noexcept;
  void forget_later(std::uint64_t connection);
  void report_disconnect(std::uint64_t connection, const Connection& state, const Error& error);
  // Runs a ConnectionEvents handler: whatever it throws is logged, never thrown on.
  template <typename Call>
  void notify(const char* event, const Endpoint& peer, Call call) noexcept;

  Context context_;  // first, so it goes last: keeps the loop and back-end allocated if the Context went
  EventLoop& loop_;
  SocketKind expected_;
  std::string receiver_kind_;
  Callbacks callbacks_;
  ConnectionEvents events_;
  StatsCounters& stats_;
  std::size_t reply_window_;
  std::shared_ptr<std::atomic<std::uint64_t>> replies_queued_ = std::make_shared<std::atomic<std::uint64_t>>(0);
  AdmissionOptions admission_;
  MisbehaviourCooldown cooldown_;                        // loop thread only
  RejectionLog cooldown_log_;                            // refusals of held-off peers: rate-limited
  std::map<std::string, AnsweredChallenge> challenges_;  // by the peer's address; loop thread only
  std::set<std::uint64_t> unintroduced_;                 // connections waiting for their introduction, oldest first
  EventLoop::TimerId idle_timer_ = 0;
  EventLoop::TimerId reply_timer_ = 0;
  std::unique_ptr<LowLevelListenSocket> listener_;  // loop thread only
  Endpoint local_;
  std::map<std::uint64_t, Connection> connections_;  // loop thread only
  std::shared_ptr<ReceiveBudget> budget_;
  bool reassembly_buffer_;
  std::deque<PendingCharge> pending_charges_;  // loop thread only
  bool budget_refusing_ = false;               // refusals are logged once until a connection fits again
  bool evicting_ = false;                      // an eviction was logged (at warn; the next ones at debug)
  std::size_t evictions_ = 0;
  std::size_t evictions_seen_ = 0;  // evictions_ when the last request was answered
  bool charge_as_held_ = false;     // the back-end allocates as bytes arrive: charge bytes_held()
  // Tasks this object posts hold a weak_ptr to this: a callback can post one after the
  // destructor's run_sync() was queued, so FIFO order alone does not protect them.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace netio::detail
