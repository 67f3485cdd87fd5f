// The connection manager behind MultiDestinationSendSocket: connections opened on demand,
// at most max_connections of them, victims torn down by the policy (victim_selector.hpp)
// with the one-sided protocol of papers/004: flush, await completions, close, then open the
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
#include "victim_selector.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <limits>
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
constexpr std::size_t kNobody = std::numeric_limits<std::size_t>::max();

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
    case Errc::closed:
      return false;
    default:
      return true;
  }
}

}  // namespace

class MultiDestinationSendSocket::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(Context& context, MultiDestinationSendOptions options)
      : context_(context), options_(std::move(options)), selector_(options_.policy) {}

  bool send(const Endpoint& destination, std::span<const std::byte> message, bool wait) {
    const bool may_wait = wait && !context_.loop().in_loop_thread();
    const auto deadline = Clock::now() + options_.send_timeout;
    std::unique_lock lock(mutex_);
    if (closing_all_) throw closed_error(destination);
    const std::size_t id = id_of(destination);
    Destination& d = destinations_[id];  // a deque: references stay valid as it grows
    for (;;) {
      if (d.failure) {
        if (Clock::now() < d.failed_at + options_.failed_peer_retry) throw *d.failure;
        d.failure.reset();  // time to try again
      }
      switch (d.state) {
        case State::open:
          return send_on(lock, id, message, wait);
        case State::closed:
          if (closing_all_) throw closed_error(destination);
          if (options_.max_connections == 0 || slots_used_ < options_.max_connections) {
            open(lock, id);  // on return d is open (or open() threw)
            continue;
          }
          if (tear_down_for(lock, id)) continue;  // d awaits the victim's slot now
          break;  // every open connection is busy sending: wait for one to finish
        case State::awaiting_slot:
        case State::opening:
        case State::closing:
          break;
      }
      if (!may_wait) {
        if (!wait) return false;
        throw Error(Errc::would_block,
                    fmt::format("multi-destination send socket: send() to {} would wait for its connection ({}) on "
                                "the event-loop thread: use try_send() there",
                                d.name, describe(d.state)));
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

  void flush() {
    for (const auto& connection : connections()) {
      try {
        connection->flush();
      } catch (const Error& e) {
        log(LogLevel::debug, "multi-destination send socket: flush: {}", e.what());  // the next send reports it
      }
    }
  }

  bool close() {
    const bool on_loop = context_.loop().in_loop_thread();
    std::unique_lock lock(mutex_);
    closing_all_ = true;
    for (std::size_t id = 0; id < destinations_.size(); ++id) {
      Destination& d = destinations_[id];
      if (d.state == State::open) {
        selector_.closed(id);
        begin_close(lock, id, kNobody);
      } else if (d.state == State::awaiting_slot) {
        d.state = State::closed;  // its victim's close sees closing_all_ and frees the slot
      }
    }
    changed_.notify_all();
    if (on_loop) return !lost_while_closing_;
    // Opening connections are closed as they come up (install()); wait for every slot.
    const auto deadline = Clock::now() + options_.send_timeout;
    if (!changed_.wait_until(lock, deadline, [this] { return slots_used_ == 0; })) {
      log(LogLevel::warn, "multi-destination send socket: {} connections still closing after {} ms", slots_used_,
          milliseconds(options_.send_timeout));
      return false;
    }
    return !lost_while_closing_;
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

 private:
  enum class State { closed, awaiting_slot, opening, open, closing };

  struct Destination {
    Endpoint endpoint;
    std::string name;
    State state = State::closed;
    std::shared_ptr<detail::DestinationConnection> connection;
    std::size_t senders = 0;             // threads inside a send on `connection` (not a victim then)
    std::size_t hand_over_to = kNobody;  // while closing: the destination that gets the slot
    bool opened_before = false;
    bool failure_reported = false;       // this connection's failure was reported already
    std::optional<Error> failure;        // sends throw it until failed_at + failed_peer_retry
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
    return Error(Errc::closed, fmt::format("multi-destination send socket: send() to {} after close()",
                                           destination.to_string()));
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

  // Sends on the open connection of `id` with the lock released; the connection cannot be
  // chosen as a victim meanwhile (senders > 0).
  bool send_on(std::unique_lock<std::mutex>& lock, std::size_t id, std::span<const std::byte> message, bool wait) {
    Destination& d = destinations_[id];
    ++d.senders;
    selector_.used(id);
    const auto connection = d.connection;
    lock.unlock();
    bool sent = false;
    try {
      sent = connection->send(message, wait);
    } catch (const Error& e) {
      lock.lock();
      release_sender(d);
      if (!is_connection_failure(e)) throw;
      throw fail(lock, id, e);
    }
    lock.lock();
    release_sender(d);
    if (sent) stats_.add_message(message.size());
    return sent;
  }

  void release_sender(Destination& d) {
    if (--d.senders == 0) changed_.notify_all();  // it may be a victim now
  }

  // Opens the connection of `id` in a free slot (the lock released while the socket is made).
  void open(std::unique_lock<std::mutex>& lock, std::size_t id) {
    Destination& d = destinations_[id];
    d.state = State::opening;
    take_slot();
    const Endpoint endpoint = d.endpoint;
    lock.unlock();
    std::shared_ptr<detail::DestinationConnection> connection;
    try {
      connection = std::make_shared<detail::DestinationConnection>(context_, endpoint, options_);
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
    if (closing_all_) {
      begin_close(lock, id, kNobody);  // close() ran while it was connecting
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

  // Flush, await completions, close: the socket's asynchronous close; the slot is freed
  // (or handed to `hand_over_to`) in closed().
  void begin_close(std::unique_lock<std::mutex>& lock, std::size_t id, std::size_t hand_over_to) {
    Destination& d = destinations_[id];
    d.state = State::closing;
    d.hand_over_to = hand_over_to;
    const auto connection = d.connection;
    lock.unlock();
    connection->close([self = shared_from_this(), id](const Error* error) { self->closed(id, error); });
    lock.lock();
  }

  // On the loop thread when a close ended.
  void closed(std::size_t id, const Error* error) {
    std::shared_ptr<detail::DestinationConnection> finished;
    std::size_t grant = kNobody;
    std::optional<Error> report;
    Endpoint reported_endpoint;
    {
      std::unique_lock lock(mutex_);
      Destination& d = destinations_[id];
      finished = std::move(d.connection);
      d.state = State::closed;
      if (error != nullptr) {
        if (closing_all_) lost_while_closing_ = true;
        if (!d.failure_reported) {
          report = record_failure(d, *error);
          reported_endpoint = d.endpoint;
        }
      }
      const std::size_t requester = std::exchange(d.hand_over_to, kNobody);
      if (requester != kNobody && destinations_[requester].state == State::awaiting_slot && !closing_all_) {
        destinations_[requester].state = State::opening;  // the slot passes on, still counted
        grant = requester;
      } else {
        if (requester != kNobody && destinations_[requester].state == State::awaiting_slot) {
          destinations_[requester].state = State::closed;
        }
        give_back_slot();
      }
      changed_.notify_all();
    }
    if (report && options_.on_peer_failed) options_.on_peer_failed(reported_endpoint, *report);
    // Its close has ended; destroy it in a later loop task, not inside its own callback.
    if (finished) context_.loop().post([finished = std::move(finished)] {});
    if (grant != kNobody) open_granted(grant);
  }

  // Opens the connection of a destination that was handed a slot (on the loop thread).
  void open_granted(std::size_t id) {
    std::unique_lock lock(mutex_);
    const Endpoint endpoint = destinations_[id].endpoint;
    lock.unlock();
    try {
      auto connection = std::make_shared<detail::DestinationConnection>(context_, endpoint, options_);
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
      begin_close(lock, id, kNobody);
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
    d.failure = Error(e.code(), fmt::format("multi-destination send socket: destination {} failed: {}", d.name,
                                            e.what()));
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
    return total;
  }
  void note_memory_peak() {
    const std::uint64_t now = connection_bytes();
    if (now > counters_.peak_connection_bytes) counters_.peak_connection_bytes = now;
  }

  Context& context_;
  const MultiDestinationSendOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a state, a slot or a sender count changed
  std::deque<Destination> destinations_;
  std::unordered_map<std::string, std::size_t> ids_;  // by endpoint string
  detail::VictimSelector selector_;
  std::size_t slots_used_ = 0;  // destinations opening, open or closing
  bool closing_all_ = false;
  bool lost_while_closing_ = false;
  ConnectionStats counters_;
  StatsCounters stats_;
};

MultiDestinationSendSocket::MultiDestinationSendSocket(Context& context, MultiDestinationSendOptions options) {
  if (options.mode == SendMode::high_throughput && options.high_throughput.shared_pages == nullptr &&
      options.high_throughput.page_count == 0) {
    throw std::invalid_argument("multi-destination send socket: high_throughput.page_count must be at least 1");
  }
  impl_ = std::make_shared<Impl>(context, std::move(options));
}

MultiDestinationSendSocket::~MultiDestinationSendSocket() {
  try {
    impl_->close();
  } catch (const std::exception& e) {
    log(LogLevel::error, "multi-destination send socket: closing failed: {}", e.what());
  }
}

void MultiDestinationSendSocket::send(const Endpoint& destination, std::span<const std::byte> message) {
  (void)impl_->send(destination, message, true);
}
bool MultiDestinationSendSocket::try_send(const Endpoint& destination, std::span<const std::byte> message) {
  return impl_->send(destination, message, false);
}
void MultiDestinationSendSocket::flush() { impl_->flush(); }
bool MultiDestinationSendSocket::close() { return impl_->close(); }
ConnectionStats MultiDestinationSendSocket::connection_stats() const { return impl_->connection_stats(); }
SocketStats MultiDestinationSendSocket::stats() const noexcept { return impl_->stats(); }

}  // namespace netio
