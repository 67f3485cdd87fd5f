// SPDX-License-Identifier: MIT
// One compute node of netio_tsbench: a TimesliceReceiver (with a DDE replica when asked)
// that records every time-slice it hands over (arrival times, bytes), checks each
// contribution's stamp and samples its receive-buffer fill on a loop timer.
//
// Threading: construct, wait and take_records() on a user thread (not the context's loop).
// The records are written on the loop thread and handed over by take_records(), which stops
// the receiver first.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/records.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/scheduled_push/timeslice_receiver.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace netio::tools::tsbench {

struct ComputeRoleOptions {
  BenchConfig bench;
  ns::ComputeIndex compute = 0;
  Endpoint local;                     // where it listens (port 0: any)
  bool run_dde = false;               // a DDE replica in this node
  std::optional<Endpoint> dde_local;  // where the replica listens (default: local's host, port 0)
  ns::Time origin{0};                 // the run's start on this node's steady clock
  // When set: every time-slice handed over is appended to this file at once (timeslices.csv's
  // format, unbuffered), so that what a node built survives its process being killed.
  std::string journal;
  bool standby = false;  // --join: the slot kept out until join()
};

class ComputeRole {
 public:
  ComputeRole(Context& context, ComputeRoleOptions options);
  ~ComputeRole();
  ComputeRole(const ComputeRole&) = delete;
  ComputeRole& operator=(const ComputeRole&) = delete;

  Endpoint endpoint() const;
  std::optional<Endpoint> dde_endpoint() const;

  // Time-slices this node handed over so far (complete or not); any thread.
  std::uint64_t handed_over() const noexcept { return handed_over_.load(std::memory_order_acquire); }
  // How many of the time-slices below `count` belong to this node: t mod M under the fixed
  // assignment; 0 by load, where the DDE decides as the run goes (the nodes' hand-overs then
  // add up to `count`, which only the whole run can check).
  std::uint64_t share_of(ns::TimesliceIndex count) const;
  // --drain, --join (TimesliceReceiver::drain(), join()); drained(): everything below the
  // boundary built and freed, every input's farewell in. Any thread but the loop's.
  ns::TimesliceIndex drain() { return receiver_->drain(); }
  bool drained() const { return receiver_->stats().drained; }
  bool wait_drained(std::chrono::nanoseconds timeout) { return receiver_->wait_drained(timeout); }
  void join() { receiver_->join(); }
  // Inputs that connected and have closed their connections since; any thread.
  std::uint32_t inputs_gone() const { return receiver_->stats().inputs_gone; }

  // Stops the receiver (and the sampling) and returns what was recorded. Once.
  RunRecords take_records();

 private:
  void on_timeslice(const scheduled_push::TimesliceView& view);
  void sample_fill();

  Context& context_;
  ComputeRoleOptions options_;
  RunRecords records_;  // loop thread until take_records()
  std::atomic<std::uint64_t> handed_over_{0};
  // --join 'input,at=T': the lowest time-slice built with the standby input's contribution
  // (loop thread); its interval's start is the boundary (T is one, and this node's first
  // place from T on lies in T's interval).
  std::optional<ns::TimesliceIndex> first_with_joiner_;
  int journal_fd_ = -1;
  EventLoop::TimerId sampler_ = 0;
  std::unique_ptr<scheduled_push::TimesliceReceiver> receiver_;
};

}  // namespace netio::tools::tsbench
