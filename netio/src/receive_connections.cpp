// SPDX-License-Identifier: MIT
#include "receive_connections.hpp"

#include "current_exception.hpp"

#include "introduction.hpp"
#include "netio/internal/little_endian.hpp"
#include "netio/log.hpp"
#include "netio/printable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace netio::detail {

ReceiveConnections::ReceiveConnections(Context& context, const Endpoint& local, SocketKind expected,
                                       std::string_view receiver_kind, Callbacks callbacks, ConnectionEvents events,
                                       StatsCounters& stats, std::size_t reply_window,
                                       std::shared_ptr<ReceiveBudget> budget, bool reassembly_buffer,
                                       AdmissionOptions admission)
    : context_(share_context(context)),
      loop_(context_.loop()),
      expected_(expected),
      receiver_kind_(receiver_kind),
      callbacks_(std::move(callbacks)),
      events_(std::move(events)),
      stats_(stats),
      reply_window_(reply_window),
      admission_(std::move(admission)),
      cooldown_(admission_.misbehaviour_cooldown),
      budget_(std::move(budget)),
      reassembly_buffer_(reassembly_buffer) {
  admission_.max_connections = admission_.connection_limit();  // from the descriptor limit now, by default
  if (admission_.key) require_auth_support(fmt::format("the receive socket at {}", local.to_string()));
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
    listen_callbacks.on_out_of_descriptors = [this] {
      return evict_silent(0, "the process is out of file descriptors and a new peer waits to be accepted");
    };
    ListenLimits limits;
    limits.max_pending_handshakes = admission_.max_pending_handshakes;
    limits.handshake_timeout = admission_.handshake_timeout;
    limits.progress_timeout = admission_.progress_timeout;
    limits.accept_backoff = admission_.accept_backoff;
    if (admission_.key) limits.accept_data_size = auth_accept_size;  // our answer to the sender's challenge
    listener_->listen(local, std::move(listen_callbacks), limits);
    local_ = listener_->local_endpoint();
    charge_as_held_ = budget_ && !listener_->allocates_receive_buffers_up_front();
    if (admission_.idle_timeout > std::chrono::nanoseconds::zero()) {
      const auto period = std::max<std::chrono::nanoseconds>(admission_.idle_timeout / 4, std::chrono::milliseconds(1));
      idle_timer_ = loop_.add_timer(period, period, [this] { sweep_idle(); });
    }
    if (admission_.reply_timeout > std::chrono::nanoseconds::zero()) {
      const auto period =
          std::max<std::chrono::nanoseconds>(admission_.reply_timeout / 4, std::chrono::milliseconds(1));
      reply_timer_ = loop_.add_timer(period, period, [this] { sweep_unread_replies(); });
    }
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
  if (idle_timer_ != 0) loop_.cancel_timer(std::exchange(idle_timer_, 0));
  if (reply_timer_ != 0) loop_.cancel_timer(std::exchange(reply_timer_, 0));
  for (auto& [id, connection] : connections_) {
    if (connection.handshake_timer != 0) loop_.cancel_timer(std::exchange(connection.handshake_timer, 0));
    close_connection(connection);
  }
  unintroduced_.clear();
}

AcceptDecision ReceiveConnections::on_request(const Endpoint& peer, std::span<const std::byte> hello) {
  if (auto refusal = held_off(peer)) return std::move(*refusal);
  AcceptDecision decision;
  try {
    decision = fit_to_budget(peer, admit(peer, expect_hello(hello, expected_, receiver_kind_)));
  } catch (const Error& e) {
    log(LogLevel::warn, "receive socket {}: rejecting {}: {}", local_.to_string(), peer.to_string(), e.what());
    decision = AcceptDecision::reject(e.what());
  }
  // An episode of evictions ends with a newcomer that needed none, neither for its hello nor
  // for its accept (the listener evicts for descriptors before the hello is read).
  if (evictions_ == evictions_seen_) evicting_ = false;
  evictions_seen_ = evictions_;
  return decision;
}

AcceptDecision ReceiveConnections::admit(const Endpoint& peer, const Hello& hello) {
  if (!admission_.allow.empty() &&
      std::none_of(admission_.allow.begin(), admission_.allow.end(),
                   [&peer](const PeerNetwork& network) { return network.contains(peer.host); })) {
    throw Error(Errc::handshake_rejected,
                fmt::format("{} is not in the networks this listener allows ({} allowed)", peer.host,
                            admission_.allow.size() == 1 ? admission_.allow.front().to_string()
                                                         : fmt::format("{} networks", admission_.allow.size())));
  }
  // Connections the back-end accepted but has not handed over yet (libfabric: FI_CONNECTED
  // not seen) count as held: a burst of requests answered in one go must not overshoot.
  if (admission_.max_connections != 0 && live_connections() + listener_->establishing() >= admission_.max_connections &&
      (listener_->establishing() >= admission_.max_connections ||
       !evict_silent(0, fmt::format("the listener holds {} connections, its limit (max_connections), and a new peer "
                                    "needs room",
                                    admission_.max_connections)))) {
    throw Error(Errc::handshake_rejected,
                fmt::format("the listener holds {} connections, its limit (max_connections), all of them sending; "
                            "try again later",
                            admission_.max_connections));
  }
  if (admission_.key && !hello.challenge) {
    throw Error(Errc::handshake_rejected,
                "this listener requires authentication with a pre-shared key, and the "
                "sender brought none (give the send socket the key)");
  }
  if (!admission_.key && hello.challenge) {
    throw Error(Errc::handshake_rejected,
                "the sender authenticates with a pre-shared key, but this listener has "
                "none (give the receive socket the key, or the sender none)");
  }
  AcceptDecision decision = callbacks_.decide(hello);
  decision.max_reply_size = admission_.max_reply_size;  // whatever the sender declares it takes
  if (!decision.accepted || !admission_.key) return decision;
  // Answer the challenge: a fresh nonce of our own, and the proof over both.
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(challenges_, [&](const auto& entry) {
    return now - entry.second.answered > admission_.handshake_timeout + std::chrono::seconds(1);
  });
  AnsweredChallenge answered{*hello.challenge, random_nonce(), now};
  const AuthProof proof =
      auth_proof(*admission_.key, AuthRole::listener, answered.sender_nonce, answered.listener_nonce);
  decision.accept_data.assign(answered.listener_nonce.begin(), answered.listener_nonce.end());
  decision.accept_data.insert(decision.accept_data.end(), proof.begin(), proof.end());
  challenges_[peer.to_string()] = answered;
  return decision;
}

void ReceiveConnections::offended(const Endpoint& peer, const std::string& why) {
  if (!cooldown_.enabled() || !listener_ || !listener_->peers_are_processes()) return;
  cooldown_.offended(peer.host, why, std::chrono::steady_clock::now());
}

std::optional<AcceptDecision> ReceiveConnections::held_off(const Endpoint& peer) {
  if (!cooldown_.enabled()) return std::nullopt;
  const auto hold = cooldown_.held(peer.host, std::chrono::steady_clock::now());
  if (!hold) return std::nullopt;
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  auto reason = fmt::format(
      "{} was disconnected for misbehaving ({}); it is refused for {} ms (misbehaviour_cooldown, doubled for each "
      "repeat), {} ms more",
      peer.host, hold->why, duration_cast<milliseconds>(hold->length).count(),
      duration_cast<milliseconds>(hold->remaining).count());
  cooldown_log_.reject(local_.to_string(), peer.to_string(), reason);
  auto refusal = AcceptDecision::reject(std::move(reason));
  // Answered when the hold ends: a peer that reconnects at once waits instead of spinning us.
  refusal.answer_after = hold->remaining;
  return refusal;
}

std::size_t ReceiveConnections::live_connections() const {
  return static_cast<std::size_t>(
      std::count_if(connections_.begin(), connections_.end(), [](const auto& entry) { return !entry.second.gone; }));
}

namespace {
// A handshake accepted this long ago whose connection never came (the peer gave up before
// libfabric established it) no longer holds its buffers' share of the budget.
constexpr std::chrono::seconds pending_charge_lifetime{60};
}  // namespace

AcceptDecision ReceiveConnections::fit_to_budget(const Endpoint& peer, AcceptDecision decision) {
  const auto now = std::chrono::steady_clock::now();
  while (!pending_charges_.empty() && now - pending_charges_.front().since > pending_charge_lifetime) {
    pending_charges_.pop_front();
  }
  if (!decision.accepted || !budget_) return decision;
  const std::size_t buffer = std::max<std::size_t>(decision.max_buffer_size, 1);
  const bool up_front = !charge_as_held_;
  // Up front: buffers counted beside the credits, to reassemble in. As held: reassembly is
  // counted as its bytes arrive (PageParser), from nothing.
  const std::size_t extra = up_front && reassembly_buffer_ ? 1 : 0;
  const std::size_t least = up_front ? (1 + extra) * buffer : idle_connection_charge;
  const std::string eviction = fmt::format(
      "the receiver's memory budget has no room for a new peer ({} of {} bytes "
      "held)",
      budget_->used(), budget_->limit());
  BudgetCharge charge(budget_);
  std::size_t credits = decision.receive_credits;
  if (up_front) {
    if (budget_->available() < (credits + extra) * buffer) evict_silent((credits + extra) * buffer, eviction);
    auto fitting = [&] {
      const std::size_t buffers = budget_->available() / buffer;
      return buffers > extra ? buffers - extra : 0;
    };
    credits = std::min(credits, fitting());
    // Others may take from a shared budget meanwhile: retry with what is left.
    while (credits > 0 && !charge.grow((credits + extra) * buffer)) credits = std::min(credits - 1, fitting());
  } else if (!charge.grow(least) && !(evict_silent(least, eviction) && charge.grow(least))) {
    credits = 0;
  }
  // Logged once until connections fit whole again: a flood of peers is one episode.
  if (credits == 0) {
    detail::BudgetAccounting::count_refusal(*budget_);
    auto reason = fmt::format(
        "the receiver's memory budget is used up: {} of {} bytes held by peers that are all "
        "sending, and a connection needs {} bytes at least ({})",
        budget_->used(), budget_->limit(), least,
        !up_front    ? "what an idle connection holds"
        : extra != 0 ? "one receive buffer and as much to reassemble messages in"
                     : "one receive buffer");
    if (!std::exchange(budget_refusing_, true)) {
      log(LogLevel::warn,
          "receive socket {}: rejecting {}: {} (further refusals are not logged until connections "
          "fit again)",
          local_.to_string(), peer.to_string(), reason);
    }
    return AcceptDecision::reject(std::move(reason));
  }
  if (credits < decision.receive_credits) {
    if (!std::exchange(budget_refusing_, true)) {
      log(LogLevel::warn,
          "receive socket {}: the memory budget ({} of {} bytes held) leaves {} {} of the {} "
          "receive credits asked (further cuts are not logged until connections fit again)",
          local_.to_string(), budget_->used(), budget_->limit(), peer.to_string(), credits, decision.receive_credits);
    }
  } else {
    budget_refusing_ = false;
  }
  decision.receive_credits = credits;
  pending_charges_.push_back({peer.to_string(), std::move(charge), extra * buffer, now});
  return decision;
}

bool ReceiveConnections::evict_silent(std::size_t bytes, const std::string& why, std::uint64_t keep) {
  // A peer that proved the key is trusted to hold its connection, sending or not.
  auto silent = [&](std::uint64_t id, const Connection& c) {
    return id != keep && !c.gone && !c.delivered && !(admission_.key && c.state);
  };
  if (bytes != 0) {
    // Evicting helps only when what the silent ones hold makes room (a shared budget may be
    // held by other sockets): otherwise none goes.
    std::size_t reclaimable = 0;
    for (const auto& [id, connection] : connections_) {
      if (silent(id, connection)) reclaimable += connection.buffers.bytes();
    }
    if (!budget_ || budget_->available() + reclaimable < bytes) return false;
  }
  bool evicted = false;
  for (;;) {
    if (bytes == 0 ? evicted : budget_ && budget_->available() >= bytes) return true;
    std::uint64_t victim = 0;
    for (const std::uint64_t id : unintroduced_) {  // oldest first
      if (id != keep) {
        victim = id;
        break;
      }
    }
    // Then the introduced one idle longest (its introduction the oldest).
    if (victim == 0) {
      std::optional<std::chrono::steady_clock::time_point> since;
      for (const auto& [id, connection] : connections_) {
        if (silent(id, connection) && (!since || connection.last_data < *since)) {
          victim = id;
          since = connection.last_data;
        }
      }
    }
    if (victim == 0) return false;
    // One warning per episode of evictions (a flood of silent peers is one), the rest at debug.
    const LogLevel level = std::exchange(evicting_, true) ? LogLevel::debug : LogLevel::warn;
    ++evictions_;
    const auto it = connections_.find(victim);
    const auto silence =
        it == connections_.end() || !it->second.state
            ? std::string("not introduced")
            : fmt::format("idle for {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::steady_clock::now() - it->second.last_data)
                                                .count());
    drop_now(victim,
             fmt::format("it holds {} bytes of the memory budget and has sent no data ({}): evicted, as {}",
                         it != connections_.end() ? it->second.buffers.bytes() : 0, silence, why),
             level);
    evicted = true;
  }
}

bool ReceiveConnections::charge_held(std::uint64_t id, Connection& connection) {
  const std::size_t held = connection.socket->bytes_held();
  const std::size_t charged = connection.buffers.bytes();
  if (held <= charged || connection.buffers.grow(held - charged)) return true;
  evict_silent(held - charged,
               fmt::format("the receiver's memory budget has no room for the buffers of a peer that is sending ({} of "
                           "{} bytes held)",
                           budget_->used(), budget_->limit()),
               id);
  if (connection.buffers.grow(held - charged)) return true;
  detail::BudgetAccounting::count_refusal(*budget_);
  return false;
}

void ReceiveConnections::claim_charge(Connection& connection) {
  const std::string name = connection.peer.to_string();
  const auto it = std::find_if(pending_charges_.begin(), pending_charges_.end(),
                               [&](const PendingCharge& p) { return p.peer == name; });
  if (it == pending_charges_.end()) {
    connection.buffers = BudgetCharge(budget_);  // what it comes to hold is still counted
    return;
  }
  connection.buffers = std::move(it->charge);
  connection.reassembly_allowance = it->reassembly_allowance;
  pending_charges_.erase(it);
}

void ReceiveConnections::on_accepted(std::unique_ptr<LowLevelReceiveSocket> socket) {
  const std::uint64_t id = next_connection_id();
  auto& connection = connections_[id];
  connection.peer = socket->peer();
  connection.socket = std::move(socket);
  claim_charge(connection);
  if (admission_.key) {
    const auto it = challenges_.find(connection.peer.to_string());
    if (it != challenges_.end()) {
      connection.challenge = std::make_pair(it->second.sender_nonce, it->second.listener_nonce);
      challenges_.erase(it);
    }
  }
  connection.replies =
      std::make_shared<ReplySender>(loop_, *connection.socket, reply_window_, admission_.max_reply_size, budget_,
                                    connection.peer.to_string(), replies_queued_);
  stats_.connections().fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::debug, "receive socket {}: accepted {}", local_.to_string(), connection.peer.to_string());
  LowLevelReceiveSocket::Callbacks socket_callbacks;
  // `connection` stays at its address: std::map nodes do not move, and the socket (whose
  // callbacks these are) goes before the node.
  socket_callbacks.on_data = [this, id, c = &connection](ReceivedBuffer buffer) { on_data(id, *c, std::move(buffer)); };
  socket_callbacks.on_disconnected = [this, id, c = &connection](const Error& error) {
    if (std::exchange(c->gone, true)) return;
    if (error.code() == Errc::protocol_error) offended(c->peer, error.what());
    c->replies->close();
    if (c->state)
      report_disconnect(id, *c, error);
    else
      stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
    forget_later(id);
  };
  socket_callbacks.on_reply_completed = [c = &connection](Buffer* buffer) { c->replies->on_completed(buffer); };
  connection.socket->start(std::move(socket_callbacks));
  expect_introduction(id, connection);
}

void ReceiveConnections::expect_introduction(std::uint64_t id, Connection& connection) {
  if (connection.gone || connection.state) return;
  if (admission_.handshake_timeout > std::chrono::nanoseconds::zero()) {
    connection.handshake_timer = loop_.add_timer(admission_.handshake_timeout, {}, [this, id] {
      const auto it = connections_.find(id);
      if (it == connections_.end()) return;
      it->second.handshake_timer = 0;
      drop_now(
          id, fmt::format("no introduction within the handshake timeout ({} ms)",
                          std::chrono::duration_cast<std::chrono::milliseconds>(admission_.handshake_timeout).count()));
    });
  }
  unintroduced_.insert(id);
  if (admission_.max_pending_handshakes != 0 && unintroduced_.size() > admission_.max_pending_handshakes) {
    drop_now(*unintroduced_.begin(),
             fmt::format("{} connections wait for their introduction, the most this listener keeps; the oldest goes",
                         admission_.max_pending_handshakes));
  }
}

std::span<const std::byte> ReceiveConnections::authenticated(const Connection& connection,
                                                             std::span<const std::byte> bytes) const {
  if (!admission_.key) return bytes;
  if (!connection.challenge) {
    throw Error(Errc::handshake_rejected, "no challenge was answered for this connection (authentication failed)");
  }
  if (bytes.size() < auth_block_size || load_le<std::uint32_t>(bytes.data()) != auth_block_magic) {
    throw Error(Errc::handshake_rejected, "the sender sent no proof of the pre-shared key (authentication failed)");
  }
  if (!auth_proof_matches(*admission_.key, AuthRole::sender, connection.challenge->first, connection.challenge->second,
                          bytes.subspan(4, auth_proof_size))) {
    throw Error(Errc::handshake_rejected,
                "the sender's proof of the pre-shared key is wrong (a different key, or an answer replayed from "
                "another connection): authentication failed");
  }
  return bytes.subspan(auth_block_size);
}

void ReceiveConnections::on_data(std::uint64_t id, Connection& connection, ReceivedBuffer buffer) {
  if (idle_timer_ != 0) connection.last_data = std::chrono::steady_clock::now();
  if (charge_as_held_ && !charge_held(id, connection)) {
    drop_in_callback(id, connection,
                     fmt::format("its receive buffers ({} bytes) do not fit the receiver's memory budget ({} of {} "
                                 "bytes held by peers that are all sending)",
                                 connection.socket->bytes_held(), budget_->used(), budget_->limit()));
    return;
  }
  if (connection.state) {
    connection.delivered = true;
    callbacks_.on_data(connection.state, std::move(buffer));
    return;
  }
  on_introduction(id, connection, buffer.bytes());
}

void ReceiveConnections::drop_in_callback(std::uint64_t id, Connection& connection, const std::string& why) {
  // Inside the socket's own callback: it may be closed here, not destroyed.
  log(LogLevel::warn, "receive socket {}: disconnecting {}: {}", local_.to_string(), connection.peer.to_string(), why);
  connection.gone = true;
  close_connection(connection);
  if (connection.state) {
    report_disconnect(id, connection,
                      Error(Errc::protocol_error, fmt::format("{}: {}", connection.peer.to_string(), why)));
  } else {
    stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  }
  forget_later(id);
}

void ReceiveConnections::on_introduction(std::uint64_t id, Connection& connection, std::span<const std::byte> bytes) {
  auto state = std::make_shared<PeerState>();
  state->connection = id;
  state->address = connection.peer;
  state->replies = connection.replies;
  state->reassembly_allowance = connection.reassembly_allowance;
  try {
    state->identity = decode_introduction(authenticated(connection, bytes));
  } catch (const Error& e) {
    offended(connection.peer, e.what());
    drop_in_callback(id, connection, e.what());
    return;
  }
  unintroduced_.erase(id);
  if (connection.handshake_timer != 0) loop_.cancel_timer(std::exchange(connection.handshake_timer, 0));
  connection.last_data = std::chrono::steady_clock::now();
  connection.state = std::move(state);
  log(LogLevel::debug, "receive socket {}: {} introduced itself as '{}'", local_.to_string(),
      connection.peer.to_string(), printable(connection.state->identity.name));
  if (events_.on_connected)
    notify("on_connected", connection.peer, [&] { events_.on_connected(Peer(connection.state)); });
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
  unintroduced_.erase(connection);
  if (const auto it = connections_.find(connection); it != connections_.end() && it->second.handshake_timer != 0) {
    loop_.cancel_timer(std::exchange(it->second.handshake_timer, 0));
  }
  // Not from inside the socket's own callback: it may still be on the stack.
  loop_.post([this, connection, alive = std::weak_ptr<int>(alive_)] {
    if (!alive.expired()) connections_.erase(connection);
  });
}

void ReceiveConnections::drop(std::uint64_t connection, const std::string& why) {
  loop_.post([this, connection, why, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    // Always what its peer sent (a frame it may not send): misbehaviour.
    if (const auto it = connections_.find(connection); it != connections_.end() && !it->second.gone) {
      offended(it->second.peer, why);
    }
    drop_now(connection, why);
  });
}

void ReceiveConnections::drop_now(std::uint64_t connection, const std::string& why, LogLevel level) {
  const auto it = connections_.find(connection);
  // Gone already: its end of file was read after the fault that asked for the drop, in
  // the same round, and was reported then.
  if (it == connections_.end() || it->second.gone) return;
  it->second.gone = true;
  unintroduced_.erase(connection);
  if (it->second.handshake_timer != 0) loop_.cancel_timer(std::exchange(it->second.handshake_timer, 0));
  log(level, "receive socket {}: disconnecting {}: {}", local_.to_string(), it->second.peer.to_string(), why);
  close_connection(it->second);
  if (it->second.state) {
    report_disconnect(connection, it->second,
                      Error(Errc::protocol_error, fmt::format("{}: {}", it->second.peer.to_string(), why)));
  } else {
    stats_.disconnects().fetch_add(1, std::memory_order_relaxed);
  }
  connections_.erase(it);
}

void ReceiveConnections::sweep_idle() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> idle;
  for (const auto& [id, connection] : connections_) {
    if (connection.state && !connection.gone && now - connection.last_data >= admission_.idle_timeout)
      idle.push_back(id);
  }
  for (const auto id : idle) {
    drop_now(id, fmt::format("idle for {} ms (idle timeout)",
                             std::chrono::duration_cast<std::chrono::milliseconds>(admission_.idle_timeout).count()));
  }
}

void ReceiveConnections::sweep_unread_replies() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> stalled;
  for (const auto& [id, connection] : connections_) {
    if (!connection.gone && connection.replies->stalled_for(now) >= admission_.reply_timeout) stalled.push_back(id);
  }
  for (const auto id : stalled) {
    drop_now(id, fmt::format("took none of its replies for {} ms (reply timeout): no more replies are sent to it",
                             std::chrono::duration_cast<std::chrono::milliseconds>(admission_.reply_timeout).count()));
  }
}

}  // namespace netio::detail
