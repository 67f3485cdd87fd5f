// SPDX-License-Identifier: MIT
// The connection manager behind MultiDestinationSendSocket: connections opened on demand,
// at most max_connections of them, victims torn down by the policy (victim_selector.hpp)
// with the one-sided protocol of the connection tear-down paper (ACTS): flush, await
// completions, close, then open the
// new connection in the freed slot.
//
// Every destination has a state; `slots_used_` counts the destinations holding a
// connection (opening, open or closing), which never exceeds the limit:
//
//   closed --(slot free)--> opening --> open --(victim)--> closing --> closed
//   closed --(no slot: a victim is torn down for it)--> awaiting_slot --(the victim's close
//     ends: its slot is handed over)--> opening
//
// A tear-down hands the victim's slot straight to the destination it was made for, so no
// other sender can take it in between and the requester never tears down a second victim.
// Locking: one mutex guards the states; it is never held while calling a socket (whose
// close may report on the loop thread at once, and whose constructor may wait for the
// loop), so the loop thread's close reports can always take it.
#include "netio/multi_destination_send_socket.hpp"

#include "destination_connection.hpp"
#include "netio/log.hpp"
#include "socket_metrics.hpp"
#include "stats_counters.hpp"
#include "victim_selector.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace netio {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t nobody = std::numeric_limits<std::size_t>::max();

long long milliseconds(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// Errors that say the connection is gone (as opposed to back-pressure or a bad argument).
bool is_connection_failure(const Error& e) {
  if (e.code().category() != error_category()) return true;  // an OS error
  switch (static_cast<Errc>(e.code().value())) {
    case Errc::timeout:
    case Errc::would_block:
    case Errc::message_too_large:
    case Errc::closed: return false;
    default: return true;
  }
}

}  // namespace

class MultiDestinationSendSocket::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(Context& context, MultiDestinationSendOptions options)
      : context_(detail::share_context(context)), options_(std::move(options)), selector_(options_.policy) {
    metrics_ = detail::add_socket_metrics(context, "multi_destination_send", "", stats_);
  }

  using Parts = std::span<const std::span<const std::byte>>;

  // wait_connection / wait_room: what may be waited for on a user thread. On the loop thread
  // nothing waits; `throw_on_loop` makes a send that would have waited for its connection
  // throw Errc::would_block there (send()), else the outcome says so.
  SendOutcome send(const Endpoint& destination, Parts parts, bool wait_connection, bool wait_room, bool throw_on_loop) {
    const bool on_loop = context_.loop().in_loop_thread();
    const bool may_wait = wait_connection && !on_loop;
    const auto deadline = Clock::now() + options_.send_timeout;
    std::unique_lock lock(mutex_);
    if (closing_all_) throw closed_error(destination);
    const std::size_t id = id_of(destination);
    Destination& d = destinations_[id];  // a deque: references stay valid as it grows
    for (;;) {
      throw_if_failed(d);
      switch (d.state) {
        case State::open:
          // send() on the loop thread lets the socket throw would_block for want of room.
          return send_on(lock, id, parts, wait_room && (!on_loop || throw_on_loop));
        case State::closed:
          if (closing_all_) throw closed_error(destination);
          if (make_room_for(lock, id)) continue;  // d is open now, or awaits a victim's slot
          break;                                  // every open connection is busy sending: wait for one to finish
        case State::awaiting_slot:
        case State::opening:
        case State::closing: break;
      }
      if (!may_wait) {
        if (on_loop && wait_connection && throw_on_loop) {
          throw Error(Errc::would_block,
                      fmt::format("multi-destination send socket: send() to {} would wait for its connection ({}) on "
                                  "the event-loop thread: use try_send() there",
                                  d.name, describe(d.state)));
        }
        return SendOutcome::no_connection;
      }
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && d.state != State::open) {
        throw Error(Errc::timeout,
                    fmt::format("multi-destination send socket: no connection to {} within {} ms ({}; {} of {} "
                                "connections in use)",
                                d.name, milliseconds(options_.send_timeout), describe(d.state), slots_used_,
                                options_.max_connections));
      }
    }
  }

  bool try_connect(const Endpoint& destination) {
    std::unique_lock lock(mutex_);
    if (closing_all_) throw closed_error(destination);
    const std::size_t id = id_of(destination);
    Destination& d = destinations_[id];
    for (;;) {
      throw_if_failed(d);
      switch (d.state) {
        case State::open: {
          const auto connection = d.connection;
          if (auto failure = connection->failure()) throw fail(lock, id, *failure);
          return connection->connected();
        }
        case State::closed:
          if (make_room_for(lock, id)) continue;
          return false;
        case State::awaiting_slot:
        case State::opening:
        case State::closing: return false;
      }
    }
  }

  void disconnect(const Endpoint& destination) {
    std::unique_lock lock(mutex_);
    const auto it = ids_.find(destination.to_string());
    if (it == ids_.end()) return;
    const std::size_t id = it->second;
    Destination& d = destinations_[id];
    d.failure.reset();
    if (d.state == State::open && d.senders == 0) {
      selector_.closed(id);
      begin_close(lock, id, nobody);
    } else if (d.state == State::open || d.state == State::opening) {
      d.retire = true;  // closed by its last sender on the way out, or as it comes up (install())
    }
  }

  // Recorded as the destination's failure (so that its senders do not connect again) but
  // not counted or logged as one: the caller asked for it.
  void abort(const Endpoint& destination, std::string_view reason) {
    std::shared_ptr<detail::DestinationConnection> connection;
    {
      std::lock_guard lock(mutex_);
      const auto it = ids_.find(destination.to_string());
      if (it == ids_.end()) return;
      Destination& d = destinations_[it->second];
      d.failure = Error(Errc::closed, fmt::format("multi-destination send socket: the connection to {} was aborted: {}",
                                                  d.name, reason));
      d.failed_at = Clock::now();
      d.failure_reported = true;
      if (d.state == State::open || d.state == State::closing) connection = d.connection;
      changed_.notify_all();  // senders waiting for its connection see the failure
    }
    if (connection) connection->abort(reason);  // senders inside it wake to the failure
  }

  void flush() {
    for (const auto& connection : connections()) {
      try {
        connection->flush();
      } catch (const Error& e) {
        log(LogLevel::debug, "multi-destination send socket: flush: {}", e.what());  // the next send reports it
      }
    }
  }

  // Starts closing every connection (never waits); `on_closed` runs on the loop thread once
  // every slot is free, with the first close that lost messages or nullptr.
  void close(std::function<void(const Error*)> on_closed) {
    std::unique_lock lock(mutex_);
    start_closing_all(lock);
    if (on_closed) on_closed_.push_back(std::move(on_closed));
    report_closed_if_done();
  }

  // close() and wait for it: what went wrong, if anything (a close that lost messages, the
  // first such error), or connections still closing after send_timeout (Errc::timeout, logged).
  std::optional<Error> close_and_wait() {
    const bool on_loop = context_.loop().in_loop_thread();
    std::unique_lock lock(mutex_);
    start_closing_all(lock);
    report_closed_if_done();
    if (on_loop) return lost_while_closing_;
    // Opening connections are closed as they come up (install()); wait for every slot.
    const auto deadline = Clock::now() + options_.send_timeout;
    if (!changed_.wait_until(lock, deadline, [this] { return slots_used_ == 0; })) {
      const auto message = fmt::format("multi-destination send socket: {} connections still closing after {} ms",
                                       slots_used_, milliseconds(options_.send_timeout));
      log(LogLevel::warn, "{}", message);
      return Error(Errc::timeout, message);
    }
    return lost_while_closing_;
  }

  ConnectionStats connection_stats() {
    std::lock_guard lock(mutex_);
    note_memory_peak();
    ConnectionStats s = counters_;
    s.open = slots_used_;
    s.connection_bytes = connection_bytes();
    return s;
  }

  SocketStats stats() const noexcept { return stats_.snapshot(); }

  bool context_gone() const noexcept { return detail::context_gone(context_); }
  void throw_if_context_gone() const {
    detail::throw_if_context_gone(context_, [] { return std::string("the multi-destination send socket"); });
  }

 private:
  enum class State { closed, awaiting_slot, opening, open, closing };

  struct Destination {
    Endpoint endpoint;
    std::string name;
    State state = State::closed;
    std::shared_ptr<detail::DestinationConnection> connection;
    std::size_t senders = 0;            // threads inside a send on `connection` (not a victim then)
    std::size_t hand_over_to = nobody;  // while closing: the destination that gets the slot
    bool retire = false;                // disconnect()ed while busy: close when it is idle
    bool opened_before = false;
    bool failure_reported = false;  // this connection's failure was reported already
    std::optional<Error> failure;   // sends throw it until failed_at + failed_peer_retry
    Clock::time_point failed_at{};
  };

  static const char* describe(State state) {
    switch (state) {
      case State::closed: return "not connected";
      case State::awaiting_slot: return "waiting for a connection to be torn down";
      case State::opening: return "connecting";
      case State::open: return "connected";
      case State::closing: return "its connection is being torn down";
    }
    return "?";
  }

  Error closed_error(const Endpoint& destination) const {
    return Error(Errc::closed,
                 fmt::format("multi-destination send socket: send() to {} after close()", destination.to_string()));
  }

  std::size_t id_of(const Endpoint& destination) {
    std::string name = destination.to_string();
    if (const auto it = ids_.find(name); it != ids_.end()) return it->second;
    const std::size_t id = destinations_.size();
    Destination& d = destinations_.emplace_back();
    d.endpoint = destination;
    d.name = name;
    ids_.emplace(std::move(name), id);
    return id;
  }

  void throw_if_failed(Destination& d) {
    if (!d.failure) return;
    if (Clock::now() < d.failed_at + options_.failed_peer_retry) throw *d.failure;
    d.failure.reset();  // time to try again
  }

  // For a destination without a connection: opens it in a free slot (true: it is open now),
  // or tears down a victim for it (true: it awaits that slot now); false when every open
  // connection is in use by a sender.
  bool make_room_for(std::unique_lock<std::mutex>& lock, std::size_t id) {
    if (options_.max_connections == 0 || slots_used_ < options_.max_connections) {
      open(lock, id);  // on return it is open (or open() threw)
      return true;
    }
    return tear_down_for(lock, id);
  }

  // Sends on the open connection of `id` with the lock released; the connection cannot be
  // chosen as a victim meanwhile (senders > 0).
  SendOutcome send_on(std::unique_lock<std::mutex>& lock, std::size_t id, Parts parts, bool wait) {
    Destination& d = destinations_[id];
    ++d.senders;
    selector_.used(id);
    const auto connection = d.connection;
    lock.unlock();
    bool sent = false;
    try {
      sent = connection->send(parts, wait);
    } catch (const Error& e) {
      lock.lock();
      release_sender(lock, id);
      if (!is_connection_failure(e)) throw;
      throw fail(lock, id, e);
    }
    lock.lock();
    release_sender(lock, id);
    if (!sent) return SendOutcome::no_room;
    std::size_t size = 0;
    for (const auto& part : parts) size += part.size();
    stats_.add_message(size);
    return SendOutcome::sent;
  }

  void release_sender(std::unique_lock<std::mutex>& lock, std::size_t id) {
    Destination& d = destinations_[id];
    if (--d.senders != 0) return;
    changed_.notify_all();                     // it may be a victim now
    if (d.retire && d.state == State::open) {  // disconnect() came while it was sending
      selector_.closed(id);
      begin_close(lock, id, nobody);
    }
  }

  // Opens the connection of `id` in a free slot (the lock released while the socket is made).
  void open(std::unique_lock<std::mutex>& lock, std::size_t id) {
    Destination& d = destinations_[id];
    d.state = State::opening;
    take_slot();
    const Endpoint endpoint = d.endpoint;
    const auto pages = pages_for(endpoint);
    lock.unlock();
    std::shared_ptr<detail::DestinationConnection> connection;
    try {
      connection = std::make_shared<detail::DestinationConnection>(context_, endpoint, options_, pages);
    } catch (const Error& e) {
      lock.lock();
      d.state = State::closed;
      give_back_slot();
      throw fail(lock, id, e);
    }
    lock.lock();
    install(lock, id, std::move(connection));
  }

  void take_slot() {
    ++slots_used_;
    if (slots_used_ > counters_.peak_open) counters_.peak_open = slots_used_;
  }
  void give_back_slot() {
    --slots_used_;
    changed_.notify_all();
    report_closed_if_done();
  }

  void install(std::unique_lock<std::mutex>& lock, std::size_t id,
               std::shared_ptr<detail::DestinationConnection> connection) {
    Destination& d = destinations_[id];
    d.connection = std::move(connection);
    d.state = State::open;
    d.failure_reported = false;
    ++counters_.opened;
    if (d.opened_before) ++counters_.reopened;
    d.opened_before = true;
    changed_.notify_all();
    if (closing_all_ || std::exchange(d.retire, false)) {
      begin_close(lock, id, nobody);  // close() or disconnect() ran while it was connecting
      return;
    }
    selector_.opened(id);
  }

  // Tears down the policy's victim to make room for `requester`. False when every open
  // connection is in use by a sender right now.
  bool tear_down_for(std::unique_lock<std::mutex>& lock, std::size_t requester) {
    const auto victim = selector_.victim([this](std::size_t v) { return destinations_[v].senders == 0; });
    if (!victim) return false;
    note_memory_peak();  // memory only grows between tear-downs: the peak is just before one
    selector_.torn_down(*victim);
    ++counters_.torn_down;
    destinations_[requester].state = State::awaiting_slot;
    log(LogLevel::debug, "multi-destination send socket: tearing down {} ({}) for {}", destinations_[*victim].name,
        to_string(options_.policy), destinations_[requester].name);
    begin_close(lock, *victim, requester);
    return true;
  }

  void start_closing_all(std::unique_lock<std::mutex>& lock) {
    closing_all_ = true;
    for (std::size_t id = 0; id < destinations_.size(); ++id) {
      Destination& d = destinations_[id];
      if (d.state == State::open) {
        selector_.closed(id);
        begin_close(lock, id, nobody);
      } else if (d.state == State::awaiting_slot) {
        d.state = State::closed;  // its victim's close sees closing_all_ and frees the slot
      }
    }
    changed_.notify_all();
  }

  // Once closing everything has ended, hands the close() callbacks to the loop (never called
  // under the mutex, and never inside the caller's own call).
  void report_closed_if_done() {
    if (!closing_all_ || slots_used_ != 0 || on_closed_.empty()) return;
    context_.loop().post([callbacks = std::exchange(on_closed_, {}), error = lost_while_closing_] {
      for (const auto& callback : callbacks) callback(error ? &*error : nullptr);
    });
  }

  // Flush, await completions, close: the socket's asynchronous close; the slot is freed
  // (or handed to `hand_over_to`) in closed().
  void begin_close(std::unique_lock<std::mutex>& lock, std::size_t id, std::size_t hand_over_to) {
    Destination& d = destinations_[id];
    d.state = State::closing;
    d.retire = false;
    d.hand_over_to = hand_over_to;
    const auto connection = d.connection;
    lock.unlock();
    connection->close([self = shared_from_this(), id](const Error* error) { self->closed(id, error); });
    lock.lock();
  }

  // On the loop thread when a close ended.
  void closed(std::size_t id, const Error* error) {
    std::shared_ptr<detail::DestinationConnection> finished;
    std::size_t grant = nobody;
    std::optional<Error> report;
    Endpoint reported_endpoint;
    {
      std::unique_lock lock(mutex_);
      Destination& d = destinations_[id];
      finished = std::move(d.connection);
      d.state = State::closed;
      if (error != nullptr) {
        if (closing_all_ && !lost_while_closing_) {
          lost_while_closing_ =
              Error(error->code(), fmt::format("multi-destination send socket: closing the connection "
                                               "to {} lost messages: {}",
                                               d.endpoint.to_string(), error->what()));
        }
        if (!d.failure_reported) {
          report = record_failure(d, *error);
          reported_endpoint = d.endpoint;
        }
      }
      const std::size_t requester = std::exchange(d.hand_over_to, nobody);
      if (requester != nobody && destinations_[requester].state == State::awaiting_slot && !closing_all_) {
        destinations_[requester].state = State::opening;  // the slot passes on, still counted
        grant = requester;
      } else {
        if (requester != nobody && destinations_[requester].state == State::awaiting_slot) {
          destinations_[requester].state = State::closed;
        }
        give_back_slot();
      }
      changed_.notify_all();
    }
    if (report && options_.on_peer_failed) options_.on_peer_failed(reported_endpoint, *report);
    // Its close has ended; destroy it in a later loop task, not inside its own callback.
    if (finished) context_.loop().post([finished = std::move(finished)] {});
    if (grant != nobody) open_granted(grant);
  }

  // Opens the connection of a destination that was handed a slot (on the loop thread).
  void open_granted(std::size_t id) {
    std::unique_lock lock(mutex_);
    const Endpoint endpoint = destinations_[id].endpoint;
    const auto pages = pages_for(endpoint);
    lock.unlock();
    try {
      auto connection = std::make_shared<detail::DestinationConnection>(context_, endpoint, options_, pages);
      lock.lock();
      install(lock, id, std::move(connection));
    } catch (const Error& e) {
      if (!lock.owns_lock()) lock.lock();
      destinations_[id].state = State::closed;
      give_back_slot();
      const Error error = fail(lock, id, e);
      log(LogLevel::debug, "multi-destination send socket: {}", error.what());  // its sender will throw it
    }
  }

  // Records that the connection of `id` failed with `e`, starts closing it, tells
  // on_peer_failed, and returns the error to throw (naming the destination).
  Error fail(std::unique_lock<std::mutex>& lock, std::size_t id, const Error& e) {
    Destination& d = destinations_[id];
    const bool first = !d.failure_reported;
    if (first) record_failure(d, e);
    const Error error = d.failure ? *d.failure : e;
    if (d.state == State::open) {
      selector_.closed(id);
      begin_close(lock, id, nobody);
    }
    if (first && options_.on_peer_failed) {
      const Endpoint endpoint = d.endpoint;
      lock.unlock();
      options_.on_peer_failed(endpoint, error);
      lock.lock();
    }
    return error;
  }

  Error record_failure(Destination& d, const Error& e) {
    d.failure_reported = true;
    d.failure =
        Error(e.code(), fmt::format("multi-destination send socket: destination {} failed: {}", d.name, e.what()));
    d.failed_at = Clock::now();
    ++counters_.failed;
    log(LogLevel::warn, "{}", d.failure->what());  // once per failure of a connection
    return *d.failure;
  }

  std::vector<std::shared_ptr<detail::DestinationConnection>> connections() {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<detail::DestinationConnection>> result;
    for (const Destination& d : destinations_) {
      if (d.state == State::open) result.push_back(d.connection);
    }
    return result;
  }

  std::uint64_t connection_bytes() const {
    std::uint64_t total = 0;
    for (const Destination& d : destinations_) {
      if (d.connection) total += d.connection->buffer_bytes();
    }
    for (const auto& [scheme, pool] : pages_) total += pool->bytes_allocated();
    return total;
  }

  // The page pool of the high-throughput connections to `destination`'s scheme, when the
  // socket keeps its own (a limit, no shared_pages given): sized by the limit, made on first
  // use. nullptr otherwise (each connection has its own pages, or the given pool).
  std::shared_ptr<PagePool> pages_for(const Endpoint& destination) {
    const auto& ht = options_.high_throughput;
    if (options_.mode != SendMode::high_throughput || options_.max_connections == 0 || ht.shared_pages) return nullptr;
    auto& pool = pages_[std::string(destination.scheme)];
    if (!pool) {
      pool = std::make_shared<PagePool>(PagePoolOptions{.page_count = options_.max_connections * ht.page_count,
                                                        .page_size = ht.page_size,
                                                        .per_connection = ht.page_count});
    }
    return pool;
  }
  void note_memory_peak() {
    const std::uint64_t now = connection_bytes();
    if (now > counters_.peak_connection_bytes) counters_.peak_connection_bytes = now;
  }

  Context context_;  // first, so it goes last: keeps the loop and back-ends allocated if the Context went
  const MultiDestinationSendOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a state, a slot or a sender count changed
  std::deque<Destination> destinations_;
  std::unordered_map<std::string, std::size_t> ids_;  // by endpoint string
  detail::VictimSelector selector_;
  std::map<std::string, std::shared_ptr<PagePool>> pages_;  // by scheme: see pages_for()
  std::size_t slots_used_ = 0;                              // destinations opening, open or closing
  bool closing_all_ = false;
  std::optional<Error> lost_while_closing_;                   // the first close that lost messages while closing all
  std::vector<std::function<void(const Error*)>> on_closed_;  // close()'s callbacks, until every slot is free
  ConnectionStats counters_;
  StatsCounters stats_;
  MetricsRegistry::Registration metrics_;  // last: removed before anything it reads goes
};

MultiDestinationSendSocket::MultiDestinationSendSocket(Context& context, MultiDestinationSendOptions options) {
  if (options.mode == SendMode::high_throughput && options.high_throughput.shared_pages == nullptr &&
      options.high_throughput.page_count == 0) {
    throw Error(Errc::invalid_option,
                "multi-destination send socket: high_throughput.page_count 0: must be at least 1");
  }
  impl_ = std::make_shared<Impl>(context, std::move(options));
}

MultiDestinationSendSocket::~MultiDestinationSendSocket() {
  // Nothing can be flushed once the Context went: the connections are dropped with impl_.
  if (impl_->context_gone()) return;
  try {
    (void)impl_->close_and_wait();  // what went wrong is logged
  } catch (const std::exception& e) {
    log(LogLevel::error, "multi-destination send socket: closing failed: {}", e.what());
  }
}

void MultiDestinationSendSocket::send(const Endpoint& destination, std::span<const std::byte> message) {
  impl_->throw_if_context_gone();
  const std::span<const std::byte> parts[] = {message};
  (void)impl_->send(destination, parts, true, true, true);
}
bool MultiDestinationSendSocket::try_send(const Endpoint& destination, std::span<const std::byte> message) {
  impl_->throw_if_context_gone();
  const std::span<const std::byte> parts[] = {message};
  return impl_->send(destination, parts, false, false, false) == SendOutcome::sent;
}
SendOutcome MultiDestinationSendSocket::send_parts(const Endpoint& destination,
                                                   std::span<const std::span<const std::byte>> parts, SendWait wait) {
  impl_->throw_if_context_gone();
  return impl_->send(destination, parts, wait != SendWait::nothing, wait == SendWait::connection_and_room, false);
}
bool MultiDestinationSendSocket::try_connect(const Endpoint& destination) {
  impl_->throw_if_context_gone();
  return impl_->try_connect(destination);
}
void MultiDestinationSendSocket::disconnect(const Endpoint& destination) {
  impl_->throw_if_context_gone();
  impl_->disconnect(destination);
}
void MultiDestinationSendSocket::abort(const Endpoint& destination, std::string_view reason) {
  impl_->throw_if_context_gone();
  impl_->abort(destination, reason);
}
void MultiDestinationSendSocket::flush() {
  impl_->throw_if_context_gone();
  impl_->flush();
}
void MultiDestinationSendSocket::close(std::function<void(const Error*)> on_closed) {
  impl_->throw_if_context_gone();
  impl_->close(std::move(on_closed));
}
void MultiDestinationSendSocket::close_and_wait() {
  impl_->throw_if_context_gone();
  if (auto error = impl_->close_and_wait()) throw std::move(*error);
}
ConnectionStats MultiDestinationSendSocket::connection_stats() const { return impl_->connection_stats(); }
SocketStats MultiDestinationSendSocket::stats() const noexcept { return impl_->stats(); }

}  // namespace netio
