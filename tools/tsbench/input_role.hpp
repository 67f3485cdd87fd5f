// SPDX-License-Identifier: MIT
// One input node of netio_tsbench: a TimesliceSender fed by a generator thread with stamped
// contributions for t = 0, 1, 2, ... below a limit the caller may set while it runs, and
// (DFS) a record of every interval: measured start and duration against the proposed ones.
//
// Threading: every method on a user thread (not the context's loop). The interval records
// are written on the loop thread and handed over by take_records(), which stops the sender.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/records.hpp"

#include "netio/context.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netio::tools::tsbench {

struct InputRoleOptions {
  BenchConfig bench;
  ns::Mode mode = ns::Mode::best_effort;
  ns::InputIndex input = 0;
  std::vector<Endpoint> computes;  // [compute index]
  std::vector<Endpoint> ddes;      // DFS: every replica
  ns::Time origin{0};              // the run's start on this node's steady clock
};

class InputRole {
 public:
  static constexpr std::uint64_t no_limit = std::numeric_limits<std::uint64_t>::max();

  InputRole(Context& context, InputRoleOptions options);
  ~InputRole();
  InputRole(const InputRole&) = delete;
  InputRole& operator=(const InputRole&) = delete;

  // Starts the generator: it pushes while t < limit(). --join 'input,at=T': the standby input's
  // waits for join() and then pushes from its boundary on.
  void start();
  void join();
  void set_limit(std::uint64_t count) noexcept { limit_.store(count, std::memory_order_release); }
  std::uint64_t pushed() const noexcept { return pushed_.load(std::memory_order_acquire); }

  // Waits for the generator to reach the limit, then finishes the sender and waits until
  // every contribution was sent and credited. Returns what went wrong, empty when nothing.
  std::string finish(std::chrono::nanoseconds timeout);
  // The first half of finish(): waits for the generator and finishes the sender, without
  // waiting for the sends. A local run ends every input's stream before it waits for any:
  // in a last round that is not whole, an input sends the rest only once its stream ended.
  void end_stream();

  // Stops the sender and returns the interval records (DFS). Once.
  std::vector<IntervalRecord> take_records();
  // The sender's statistics (before take_records()).
  scheduled_push::TimesliceSenderStats sender_stats() const { return sender_->stats(); }

 private:
  void generate();

  Context& context_;
  InputRoleOptions options_;
  std::atomic<std::uint64_t> limit_{no_limit};
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<bool> join_asked_{false};  // --join 'input,at=T': join() was called
  std::atomic<bool> stopping_{false};    // finish() or teardown: a standby input not asked to join stops
  std::mutex error_mutex_;
  std::string error_;                      // what the generator's push threw
  std::vector<IntervalRecord> intervals_;  // loop thread until take_records()
  std::unique_ptr<scheduled_push::TimesliceSender> sender_;
  std::thread generator_;
};

}  // namespace netio::tools::tsbench
