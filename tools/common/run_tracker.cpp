// SPDX-License-Identifier: MIT
#include "run_tracker.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace netio::tools {
namespace {

// Single-writer counters: a plain load and store, no locked read-modify-write.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

constexpr std::size_t max_anomalies = 100;

}  // namespace

RunTracker::RunTracker(bool verify, ClockFunction clock) : verify_(verify), clock_(std::move(clock)) {}

std::optional<RunTracker::Clock::time_point> RunTracker::first_message_at() const noexcept {
  const auto ticks = first_message_ticks_.load(std::memory_order_acquire);
  if (ticks == 0) return std::nullopt;
  return Clock::time_point(Clock::duration(ticks));
}

void RunTracker::on_message(std::span<const std::byte> message) {
  if (first_message_ticks_.load(std::memory_order_relaxed) == 0) {
    // max(1, ...): 0 is reserved for "none yet".
    first_message_ticks_.store(std::max<Clock::rep>(1, clock_().time_since_epoch().count()), std::memory_order_release);
  }
  if (looks_like_control_frame(message)) {
    if (auto frame = decode_control_frame(message)) {
      on_control(*frame);
      return;
    }
    on_data(message, true);  // bit 63 set but not a frame: a damaged data message
    return;
  }
  on_data(message, false);
}

void RunTracker::on_data(std::span<const std::byte> message, bool frame_shaped) {
  if (!run_) {
    ++stray_;
    return;
  }
  OpenRun& run = *run_;
  ++run.messages;
  run.bytes += message.size();
  bump(messages_, 1);
  bump(bytes_, message.size());
  if (!verify_) return;
  const auto sequence = frame_shaped ? std::nullopt : verify_data_message(message, run.key, run.salt);
  if (!sequence) {
    ++run.corrupt;
    return;
  }
  run.sequences.record(*sequence);
}

void RunTracker::on_control(const ControlFrame& frame) {
  if (frame.kind != ControlKind::run_begin && !began()) {
    bump(ignored_controls_, 1);
    return;
  }
  switch (frame.kind) {
    case ControlKind::run_begin: {
      if (run_) {
        note_anomaly(fmt::format("run {} began before run {} ended", frame.a, run_->key.run));
        close_run(std::nullopt, false, clock_());
      }
      RunKey key{frame.a, frame.b};
      run_.emplace(OpenRun{key, key.salt(), 0, 0, 0, {}, clock_()});
      current_size_.store(key.size, std::memory_order_relaxed);
      began_.store(true, std::memory_order_release);
      return;
    }
    case ControlKind::run_end:
      if (!run_ || run_->key.run != frame.a || run_->key.size != frame.b) {
        note_anomaly(fmt::format("end of run {} (size {}) without its beginning", frame.a, frame.b));
        if (run_) close_run(std::nullopt, false, clock_());
        return;
      }
      close_run(frame.c, true, clock_());
      return;
    case ControlKind::end_of_stream:
      if (run_) {
        note_anomaly(fmt::format("end of stream inside run {}", run_->key.run));
        close_run(std::nullopt, false, clock_());
      }
      end_of_stream_.store(true, std::memory_order_release);
      return;
    default: note_anomaly(fmt::format("unexpected control frame kind {}", static_cast<std::uint32_t>(frame.kind)));
  }
}

void RunTracker::close_run(std::optional<std::uint64_t> sent, bool complete, Clock::time_point end) {
  OpenRun& run = *run_;
  ThroughputResult result;
  result.size = run.key.size;
  result.messages = run.messages;
  result.bytes = run.bytes;
  result.seconds = std::chrono::duration<double>(std::max(end, run.begin) - run.begin).count();
  result.complete = complete;
  if (verify_) {
    result.verification = Verification{run.sequences.lost(sent), run.sequences.duplicated(), run.corrupt};
  }
  results_.push_back(result);
  run_.reset();
}

void RunTracker::note_anomaly(std::string text) {
  if (anomalies_.size() < max_anomalies) anomalies_.push_back(std::move(text));
}

std::vector<ThroughputResult> RunTracker::finish(std::optional<Clock::time_point> end) {
  if (run_) close_run(std::nullopt, false, end.value_or(clock_()));
  return std::move(results_);
}

}  // namespace netio::tools
