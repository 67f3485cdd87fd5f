// SPDX-License-Identifier: MIT
#include "bench_receiver.hpp"
#include "gone_watch.hpp"

#include "common/cpu_affinity.hpp"
#include "common/run_tracker.hpp"
#include "common/termination.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto tick_period = std::chrono::milliseconds(100);  // how often the supervisor looks around

// The streams of one receiver, one per connection, made at the connection's first message.
// The consumer (one thread at a time: the recv() thread, or the loop thread in ll mode)
// finds and feeds them without a lock (it is the only one adding); the supervisor reads
// them under the lock; the loop thread notes disconnections.
class Streams {
 public:
  struct Stream {
    Stream(bool verify, std::string from) : tracker(verify), peer(std::move(from)) {}
    RunTracker tracker;
    std::string peer;
    bool ended = false;  // consumer only: counted in ended()
  };
  struct Tally {
    std::size_t ended = 0;  // END_OF_STREAM seen
    std::size_t cut = 0;    // the sender disconnected without it, and nothing came for a grace period
  };

  explicit Streams(bool verify) : verify_(verify) {}

  // Consumer.
  Stream& of(const Peer& peer) {
    const ConnectionId id = peer.connection();
    if (last_ != nullptr && last_id_ == id) return *last_;
    auto it = streams_.find(id);
    if (it == streams_.end()) {
      auto made = std::make_unique<Stream>(verify_, peer.to_string());
      std::lock_guard lock(mutex_);
      it = streams_.emplace(id, std::move(made)).first;
      order_.emplace_back(id, it->second.get());
    }
    last_id_ = id;
    last_ = it->second.get();
    return *last_;
  }

  // Loop thread (ConnectionEvents::on_disconnected).
  void disconnected(ConnectionId id) {
    std::lock_guard lock(mutex_);
    disconnected_at_.emplace(id, Clock::now());
  }

  // Supervisor: streams that ended, and streams cut (sender gone without END_OF_STREAM and
  // silent for `grace` since: pages already queued are still drained meanwhile).
  Tally tally(Clock::time_point now, std::chrono::nanoseconds grace) {
    std::lock_guard lock(mutex_);
    Tally t;
    for (const auto& [id, stream] : order_) {
      if (!stream->tracker.began()) continue;  // a stranger: no stream
      if (stream->tracker.end_of_stream()) {
        ++t.ended;
        continue;
      }
      const auto gone = disconnected_at_.find(id);
      if (gone == disconnected_at_.end()) continue;
      if (watches_[id].quiet(stream->tracker.live_messages(), gone->second, now, grace)) ++t.cut;
    }
    return t;
  }

  // Supervisor: whether every sender that ended its stream has closed its connection.
  bool ended_senders_closed() {
    std::lock_guard lock(mutex_);
    for (const auto& [id, stream] : order_) {
      if (stream->tracker.end_of_stream() && !disconnected_at_.contains(id)) return false;
    }
    return true;
  }

  // Supervisor: sums over the streams that began.
  std::uint64_t live_messages() {
    return sum([](const RunTracker& t) { return t.live_messages(); });
  }
  std::uint64_t live_bytes() {
    return sum([](const RunTracker& t) { return t.live_bytes(); });
  }
  std::uint64_t live_size() {
    std::lock_guard lock(mutex_);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (it->second->tracker.began()) return it->second->tracker.live_size();
    }
    return 0;
  }
  std::optional<Clock::time_point> first_message_at() {
    std::lock_guard lock(mutex_);
    std::optional<Clock::time_point> first;
    for (const auto& [id, stream] : order_) {
      if (!stream->tracker.began()) continue;
      if (const auto at = stream->tracker.first_message_at(); at && (!first || *at < *first)) first = at;
    }
    return first;
  }

  // Once the consumer is done: the streams in the order they began.
  std::vector<std::pair<ConnectionId, Stream*>> all() {
    std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  template <typename Get>
  std::uint64_t sum(Get get) {
    std::lock_guard lock(mutex_);
    std::uint64_t total = 0;
    for (const auto& [id, stream] : order_) {
      if (stream->tracker.began()) total += get(stream->tracker);
    }
    return total;
  }

  const bool verify_;
  std::mutex mutex_;  // guards what the consumer adds (below) against the supervisor's reads
  std::map<ConnectionId, std::unique_ptr<Stream>> streams_;
  std::vector<std::pair<ConnectionId, Stream*>> order_;
  std::map<ConnectionId, Clock::time_point> disconnected_at_;
  std::map<ConnectionId, GoneWatch> watches_;  // supervisor only
  ConnectionId last_id_ = 0;                   // consumer only: the stream of the last message
  Stream* last_ = nullptr;
};

// What the consumer (recv() thread or receive callback) and the supervising main thread
// share.
class Session {
 public:
  explicit Session(const BenchReceiverOptions& options) : options_(options), streams_(options.verify) {}

  // Consumer side, for every message; false once the consumer should stop.
  bool consume(std::span<const std::byte> message, const Peer& peer) {
    if (stopping_.load(std::memory_order_relaxed)) return false;
    Streams::Stream& stream = streams_.of(peer);
    const std::uint64_t before = stream.tracker.live_messages();
    stream.tracker.on_message(message);
    if (!stream.tracker.began() && stream.tracker.ignored_controls() != 0 && !std::exchange(stranger_logged_, true)) {
      log(LogLevel::warn,
          "ignoring control messages from {}, which never began a run (not netio_throughput?); "
          "further ones, from any such connection, are counted, not logged",
          stream.peer);
    }
    const std::uint64_t counted = stream.tracker.live_messages() - before;
    if (counted != 0)
      live_messages_.store(live_messages_.load(std::memory_order_relaxed) + counted, std::memory_order_relaxed);
    if (!stream.ended && stream.tracker.end_of_stream()) {
      stream.ended = true;
      if (++ended_ >= options_.senders) {
        finish_consuming(ReceiveEnd::end_of_stream);
        return false;
      }
    }
    if (options_.max_messages && live_messages_.load(std::memory_order_relaxed) >= *options_.max_messages) {
      finish_consuming(ReceiveEnd::message_limit);
      return false;
    }
    return true;
  }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }
  void stop() noexcept { stopping_.store(true, std::memory_order_relaxed); }

  // Supervisor side: waits until the consumer ended the run, or a tick passed.
  std::optional<ReceiveEnd> wait_for_consumer(std::chrono::nanoseconds at_most) {
    std::unique_lock lock(mutex_);
    finished_.wait_for(lock, at_most, [this] { return consumer_end_.has_value(); });
    return consumer_end_;
  }

  Streams& streams() noexcept { return streams_; }
  // Data messages in runs, over all streams.
  std::uint64_t live_messages() const noexcept { return live_messages_.load(std::memory_order_relaxed); }

 private:
  void finish_consuming(ReceiveEnd end) {
    stopping_.store(true, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      consumer_end_ = end;
    }
    finished_.notify_all();
  }

  const BenchReceiverOptions& options_;
  Streams streams_;
  std::size_t ended_ = 0;                        // consumer only
  bool stranger_logged_ = false;                 // consumer only
  std::atomic<std::uint64_t> live_messages_{0};  // written by the consumer only
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable finished_;
  std::optional<ReceiveEnd> consumer_end_;  // guarded by mutex_
};

// Prints interval reports and decides when to stop; runs on the main thread.
class Supervisor {
 public:
  Supervisor(Session& session, const BenchReceiverOptions& options, const Deadline& deadline,
             const BenchReceiverCallbacks& callbacks)
      : session_(session), options_(options), deadline_(deadline), callbacks_(callbacks) {}

  ReceiveEnd run() {
    for (;;) {
      if (auto end = session_.wait_for_consumer(tick_period)) return *end;
      const auto now = Clock::now();
      note_progress(now);
      report_intervals(now);
      if (stop_requested()) return ReceiveEnd::signal;
      if (deadline_.expired()) return ReceiveEnd::timeout;
      const auto first = session_.streams().first_message_at();
      if (first && options_.duration && now >= *first + *options_.duration) return ReceiveEnd::time_limit;
      if (senders_gone(now)) return ReceiveEnd::sender_gone;
    }
  }

  // When messages last arrived, to within a tick: the end of a run cut by a vanished sender
  // or --timeout, rather than the moment the supervisor gave up waiting.
  Clock::time_point last_progress() const noexcept { return last_progress_; }

 private:
  void report_intervals(Clock::time_point now) {
    if (!callbacks_.on_interval || options_.interval <= std::chrono::nanoseconds::zero()) return;
    Streams& streams = session_.streams();
    const auto first = streams.first_message_at();
    if (!first) return;
    if (!last_report_) last_report_ = *first;
    if (now - *last_report_ < options_.interval) return;
    const std::uint64_t messages = streams.live_messages();
    const std::uint64_t bytes = streams.live_bytes();
    auto since_first = [&](Clock::time_point t) { return std::chrono::duration<double>(t - *first).count(); };
    callbacks_.on_interval({since_first(*last_report_), since_first(now), streams.live_size(),
                            messages - reported_messages_, bytes - reported_bytes_});
    last_report_ = now;
    reported_messages_ = messages;
    reported_bytes_ = bytes;
  }

  void note_progress(Clock::time_point now) {
    const std::uint64_t messages = session_.live_messages();
    if (messages != progress_messages_) {
      progress_messages_ = messages;
      last_progress_ = now;
    }
  }

  // The expected number of streams is over, and some of them were cut: their senders
  // disconnected without ending them (and nothing came for a grace period).
  bool senders_gone(Clock::time_point now) {
    const Streams::Tally tally = session_.streams().tally(now, options_.sender_gone_grace);
    return tally.cut > 0 && tally.ended + tally.cut >= options_.senders;
  }

  Session& session_;
  const BenchReceiverOptions& options_;
  const Deadline& deadline_;
  const BenchReceiverCallbacks& callbacks_;
  std::optional<Clock::time_point> last_report_;
  std::uint64_t reported_messages_ = 0;
  std::uint64_t reported_bytes_ = 0;
  std::uint64_t progress_messages_ = 0;
  Clock::time_point last_progress_ = Clock::now();
};

// After the end of the stream, the receiver stays until the senders close (at most
// sender_close_wait): a sender waits for its last page to be sent, and on libfabric a receiver
// that closes first can fail that wait ("closed the connection") though the page arrived.
constexpr auto sender_close_wait = std::chrono::seconds(2);

void wait_for_senders_to_close(Session& session, ReceiveEnd end) {
  if (end != ReceiveEnd::end_of_stream) return;
  const auto until = Clock::now() + sender_close_wait;
  while (!session.streams().ended_senders_closed() && Clock::now() < until && !stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The end of a run still open when the receiver stops.
Clock::time_point cut_time(ReceiveEnd end, const Supervisor& supervisor) {
  const bool stalled = end == ReceiveEnd::sender_gone || end == ReceiveEnd::timeout;
  return stalled ? supervisor.last_progress() : Clock::now();
}

struct Ending {
  ReceiveEnd end;
  Clock::time_point cut;
};

Ending receive_high_throughput(Context& context, Session& session, const BenchReceiverOptions& options,
                               const Deadline& deadline, const BenchReceiverCallbacks& callbacks) {
  HighThroughputReceiveOptions receive_options;
  receive_options.admission = options.admission;
  receive_options.events.on_disconnected = [&session](const Peer& peer, const Error&) {
    session.streams().disconnected(peer.connection());
  };
  HighThroughputReceiveSocket socket(context, options.local, receive_options);
  if (callbacks.on_listening) callbacks.on_listening(socket.local_endpoint());
  std::thread consumer([&] {
    if (options.consumer_cpu) {
      try {
        pin_current_thread(*options.consumer_cpu);
      } catch (const std::exception& e) {
        log(LogLevel::warn, "{}", e.what());  // checked when parsing --cpu: should not happen
      }
    }
    // Batches: one consumer turn and no page reference per message (what recv() costs).
    bool more = true;
    while (more && !session.stopping()) {
      socket.recv_each(4096, tick_period, [&](std::span<const std::byte> message, const Peer& peer) {
        return more = session.consume(message, peer);
      });
    }
  });
  Supervisor supervisor(session, options, deadline, callbacks);
  const ReceiveEnd end = supervisor.run();
  session.stop();
  consumer.join();
  wait_for_senders_to_close(session, end);
  return {end, cut_time(end, supervisor)};
}

Ending receive_low_latency(Context& context, Session& session, const BenchReceiverOptions& options,
                           const Deadline& deadline, const BenchReceiverCallbacks& callbacks) {
  // The handler runs on the event-loop thread; destroying the socket waits for it.
  LowLatencyReceiveOptions receive_options;
  receive_options.admission = options.admission;
  receive_options.events.on_disconnected = [&session](const Peer& peer, const Error&) {
    session.streams().disconnected(peer.connection());
  };
  LowLatencyReceiveSocket socket(
      context, options.local,
      [&session](std::span<const std::byte> message, const Peer& peer) { session.consume(message, peer); },
      receive_options);
  if (callbacks.on_listening) callbacks.on_listening(socket.local_endpoint());
  Supervisor supervisor(session, options, deadline, callbacks);
  const ReceiveEnd end = supervisor.run();
  session.stop();
  wait_for_senders_to_close(session, end);
  return {end, cut_time(end, supervisor)};
}

}  // namespace

BenchReceiverReport run_bench_receiver(Context& context, const BenchReceiverOptions& options, const Deadline& deadline,
                                       const BenchReceiverCallbacks& callbacks) {
  Session session(options);
  BenchReceiverReport report;
  const Ending ending = options.mode == SocketMode::high_throughput
                            ? receive_high_throughput(context, session, options, deadline, callbacks)
                            : receive_low_latency(context, session, options, deadline, callbacks);
  report.end = ending.end;
  // The socket is gone: no consumer touches the trackers any more.
  const auto streams = session.streams().all();
  std::vector<std::vector<ThroughputResult>> results;
  for (const auto& [id, stream] : streams) {
    if (!stream->tracker.began()) {
      report.stranger_messages += stream->tracker.stray_messages();
      report.stranger_controls += stream->tracker.ignored_controls();
      continue;
    }
    StreamResults& mine = report.per_stream.emplace_back();
    mine.peer = stream->peer;
    mine.ended = stream->tracker.end_of_stream();
    mine.results = stream->tracker.finish(ending.cut);
    results.push_back(mine.results);
    const bool cut_inside =
        std::any_of(mine.results.begin(), mine.results.end(), [](const ThroughputResult& r) { return !r.complete; });
    if (report.end == ReceiveEnd::end_of_stream && (!mine.ended || cut_inside))
      report.truncated_streams.push_back(mine.peer);
    report.stray_messages += stream->tracker.stray_messages();
    for (const auto& anomaly : stream->tracker.anomalies()) {
      report.anomalies.push_back(streams.size() > 1 ? stream->peer + ": " + anomaly : anomaly);
    }
  }
  report.results = merge_concurrent_results(results);
  return report;
}

}  // namespace netio::tools
