#include "bench_receiver.hpp"

#include "common/cpu_affinity.hpp"
#include "common/run_tracker.hpp"
#include "common/termination.hpp"

#include "netio/high_throughput_socket.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace netio::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(100);  // how often the supervisor looks around

// What the consumer (recv() thread or receive callback) and the supervising main thread
// share.
class Session {
 public:
  explicit Session(const BenchReceiverOptions& options) : options_(options), tracker_(options.verify) {}

  // Consumer side, for every message; false once the consumer should stop.
  bool consume(std::span<const std::byte> message) {
    if (stopping_.load(std::memory_order_relaxed)) return false;
    tracker_.on_message(message);
    if (tracker_.end_of_stream()) {
      finish_consuming(ReceiveEnd::end_of_stream);
      return false;
    }
    if (options_.max_messages && tracker_.live_messages() >= *options_.max_messages) {
      finish_consuming(ReceiveEnd::message_limit);
      return false;
    }
    return true;
  }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }
  void stop() noexcept { stopping_.store(true, std::memory_order_relaxed); }

  // Supervisor side: waits until the consumer ended the stream, or a tick passed.
  std::optional<ReceiveEnd> wait_for_consumer(std::chrono::nanoseconds at_most) {
    std::unique_lock lock(mutex_);
    finished_.wait_for(lock, at_most, [this] { return consumer_end_.has_value(); });
    return consumer_end_;
  }

  RunTracker& tracker() noexcept { return tracker_; }

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
  RunTracker tracker_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable finished_;
  std::optional<ReceiveEnd> consumer_end_;  // guarded by mutex_
};

// Prints interval reports and decides when to stop; runs on the main thread.
class Supervisor {
 public:
  Supervisor(Session& session, const BenchReceiverOptions& options, const Deadline& deadline,
             const BenchReceiverCallbacks& callbacks, std::function<SocketStats()> stats)
      : session_(session), options_(options), deadline_(deadline), callbacks_(callbacks), stats_(std::move(stats)) {}

  ReceiveEnd run() {
    for (;;) {
      if (auto end = session_.wait_for_consumer(kTick)) return *end;
      const auto now = Clock::now();
      note_progress(now);
      report_intervals(now);
      if (stop_requested()) return ReceiveEnd::signal;
      if (deadline_.expired()) return ReceiveEnd::timeout;
      const auto first = session_.tracker().first_message_at();
      if (first && options_.duration && now >= *first + *options_.duration) return ReceiveEnd::time_limit;
      if (sender_gone(now)) return ReceiveEnd::sender_gone;
    }
  }

  // When messages last arrived, to within a tick: the end of a run cut by a vanished sender
  // or --timeout, rather than the moment the supervisor gave up waiting.
  Clock::time_point last_progress() const noexcept { return last_progress_; }

 private:
  void report_intervals(Clock::time_point now) {
    if (!callbacks_.on_interval || options_.interval <= std::chrono::nanoseconds::zero()) return;
    const auto first = session_.tracker().first_message_at();
    if (!first) return;
    if (!last_report_) last_report_ = *first;
    if (now - *last_report_ < options_.interval) return;
    const RunTracker& tracker = session_.tracker();
    const std::uint64_t messages = tracker.live_messages();
    const std::uint64_t bytes = tracker.live_bytes();
    auto since_first = [&](Clock::time_point t) { return std::chrono::duration<double>(t - *first).count(); };
    callbacks_.on_interval({since_first(*last_report_), since_first(now), tracker.live_size(),
                            messages - reported_messages_, bytes - reported_bytes_});
    last_report_ = now;
    reported_messages_ = messages;
    reported_bytes_ = bytes;
  }

  void note_progress(Clock::time_point now) {
    const std::uint64_t messages = session_.tracker().live_messages();
    if (messages != progress_messages_) {
      progress_messages_ = messages;
      last_progress_ = now;
    }
  }

  // Every sender that connected has disconnected, and nothing arrived for a grace period
  // (pages already queued are still drained by the consumer meanwhile).
  bool sender_gone(Clock::time_point now) {
    const SocketStats stats = stats_();
    const std::uint64_t messages = session_.tracker().live_messages();
    if (stats.connections == 0 || stats.disconnects < stats.connections || messages != gone_messages_) {
      gone_since_.reset();
      gone_messages_ = messages;
      return false;
    }
    if (!gone_since_) gone_since_ = now;
    return now - *gone_since_ >= options_.sender_gone_grace;
  }

  Session& session_;
  const BenchReceiverOptions& options_;
  const Deadline& deadline_;
  const BenchReceiverCallbacks& callbacks_;
  std::function<SocketStats()> stats_;
  std::optional<Clock::time_point> last_report_;
  std::uint64_t reported_messages_ = 0;
  std::uint64_t reported_bytes_ = 0;
  std::optional<Clock::time_point> gone_since_;
  std::uint64_t gone_messages_ = 0;
  std::uint64_t progress_messages_ = 0;
  Clock::time_point last_progress_ = Clock::now();
};

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
      socket.recv_each(4096, kTick, [&](std::span<const std::byte> message) { return more = session.consume(message); });
    }
  });
  Supervisor supervisor(session, options, deadline, callbacks, [&] { return socket.stats(); });
  const ReceiveEnd end = supervisor.run();
  session.stop();
  consumer.join();
  return {end, cut_time(end, supervisor)};
}

Ending receive_low_latency(Context& context, Session& session, const BenchReceiverOptions& options,
                           const Deadline& deadline, const BenchReceiverCallbacks& callbacks) {
  // The handler runs on the event-loop thread; destroying the socket waits for it.
  LowLatencyReceiveOptions receive_options;
  receive_options.admission = options.admission;
  LowLatencyReceiveSocket socket(
      context, options.local,
      [&session](std::span<const std::byte> message, const Endpoint&) { session.consume(message); }, receive_options);
  if (callbacks.on_listening) callbacks.on_listening(socket.local_endpoint());
  Supervisor supervisor(session, options, deadline, callbacks, [&] { return socket.stats(); });
  const ReceiveEnd end = supervisor.run();
  session.stop();
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
  // The socket is gone: no consumer touches the tracker any more.
  report.results = session.tracker().finish(ending.cut);
  report.stray_messages = session.tracker().stray_messages();
  report.anomalies = session.tracker().anomalies();
  return report;
}

}  // namespace netio::tools
