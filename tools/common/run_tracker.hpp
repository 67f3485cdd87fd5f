// SPDX-License-Identifier: MIT
// The receiving side of the throughput benchmark as pure logic: feed it every message of
// the stream (bench_message.hpp) and it attributes each to its run, counts it and, with
// verification on, checks it. No sockets and no threads, so it is unit-testable; netio_recv
// drives it from the event-loop thread (--mode ll) or its receiving thread (--mode ht).
//
// Threading: on_message() and finish() from one thread at a time (the consumer);
// live_*() and first_message_at() from any thread, for the interval report and -t.
#pragma once

#include "bench_message.hpp"
#include "sequence_tracker.hpp"
#include "throughput_result.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace netio::tools {

class RunTracker {
 public:
  using Clock = std::chrono::steady_clock;
  using ClockFunction = std::function<Clock::time_point()>;

  // `clock` is read once per control frame and at the first message, never per message.
  explicit RunTracker(bool verify, ClockFunction clock = &Clock::now);

  void on_message(std::span<const std::byte> message);

  bool end_of_stream() const noexcept { return end_of_stream_.load(std::memory_order_acquire); }
  // Whether a run ever began: the peer speaks the benchmark's protocol (a stranger's bytes
  // are stray messages of a stream that never began).
  bool began() const noexcept { return began_.load(std::memory_order_acquire); }

  // Live counters over all runs (data messages only; control frames are not counted).
  std::uint64_t live_messages() const noexcept { return messages_.load(std::memory_order_relaxed); }
  std::uint64_t live_bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t live_size() const noexcept { return current_size_.load(std::memory_order_relaxed); }
  // When the first message (of any kind) arrived, if one has.
  std::optional<Clock::time_point> first_message_at() const noexcept;

  // Closes a run still open (marked incomplete, its time running to `end`, default now)
  // and returns the results of all runs in arrival order. Call once, after the last
  // on_message().
  std::vector<ThroughputResult> finish(std::optional<Clock::time_point> end = std::nullopt);

  // Data messages outside any run (before the first RUN_BEGIN, between RUN_END and the
  // next RUN_BEGIN, after END_OF_STREAM): a sender that is not netio_throughput, or a
  // protocol bug. Not attributed to any run, never verified.
  std::uint64_t stray_messages() const noexcept { return stray_; }
  // Protocol anomalies seen (a RUN_END for another run, a RUN_BEGIN inside a run, an
  // unknown control kind), for the tool to print; empty on a healthy stream.
  const std::vector<std::string>& anomalies() const noexcept { return anomalies_; }
  // Control frames before the first RUN_BEGIN (a RUN_END, an END_OF_STREAM from a peer that
  // never began a run): ignored, so that a stranger ends nothing, and only counted here.
  std::uint64_t ignored_controls() const noexcept { return ignored_controls_.load(std::memory_order_relaxed); }

 private:
  struct OpenRun {
    RunKey key;
    std::uint64_t salt = 0;
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    std::uint64_t corrupt = 0;
    SequenceTracker sequences;
    Clock::time_point begin;
  };

  void on_control(const ControlFrame& frame);
  void on_data(std::span<const std::byte> message, bool frame_shaped);
  void close_run(std::optional<std::uint64_t> sent, bool complete, Clock::time_point end);
  void note_anomaly(std::string text);

  bool verify_;
  ClockFunction clock_;
  std::optional<OpenRun> run_;
  std::vector<ThroughputResult> results_;
  std::uint64_t stray_ = 0;
  std::vector<std::string> anomalies_;

  std::atomic<std::uint64_t> messages_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> current_size_{0};
  std::atomic<Clock::rep> first_message_ticks_{0};  // 0: none yet
  std::atomic<bool> end_of_stream_{false};
  std::atomic<bool> began_{false};
  std::atomic<std::uint64_t> ignored_controls_{0};
};

}  // namespace netio::tools
