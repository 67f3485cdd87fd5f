// SPDX-License-Identifier: MIT
// A complete scheduled-push system on loopback for the [scheduled_push] tests: N input
// nodes (TimesliceSender) and M compute nodes (TimesliceReceiver), each with a Context of
// its own, and optionally DDE replicas. Every contribution's size and bytes derive from
// (input, t), so each receiver checks the content of every time-slice it is handed; what
// the handlers see is collected under a mutex and checked on the test thread.
#pragma once

#include "netio/context.hpp"
#include "netio/scheduled_push/dde_service.hpp"
#include "netio/scheduled_push/timeslice_receiver.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"
#include "netio/socket_options.hpp"
#include "support/test_context.hpp"
#include "support/transports.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace netio::test {

namespace sp = netio::scheduled_push;
namespace ns = netio::scheduler;

inline constexpr std::uint64_t max_contribution = 1024;

// Input i's contribution to time-slice t: 16 … 1023 bytes of a pattern seeded by (i, t).
inline std::vector<std::byte> contribution(ns::InputIndex i, ns::TimesliceIndex t) {
  const std::size_t size = 16 + (i * 131 + t * 17) % (max_contribution - 16);
  return pattern(size, t * 1000 + i);
}

struct Delivery {
  ns::TimesliceIndex t = 0;
  bool complete = false;
  bool content_ok = false;  // every contribution present matched contribution(i, t)
  std::uint32_t contributions = 0;
  std::uint32_t attempt = 0;
};

// What one receiver's handlers saw.
struct Deliveries {
  mutable std::mutex mutex;
  std::vector<Delivery> seen;

  void add(const sp::TimesliceView& view) {
    Delivery d{view.index, view.complete, true, 0, view.attempt};
    for (ns::InputIndex i = 0; i < view.contributions.size(); ++i) {
      if (view.contributed[i] == 0) continue;
      ++d.contributions;
      const auto expected = contribution(i, view.index);
      const auto got = view.contributions[i];
      if (got.size() != expected.size() || std::memcmp(got.data(), expected.data(), got.size()) != 0)
        d.content_ok = false;
    }
    std::lock_guard lock(mutex);
    seen.push_back(d);
  }
  std::vector<Delivery> copy() const {
    std::lock_guard lock(mutex);
    return seen;
  }
  std::size_t count() const {
    std::lock_guard lock(mutex);
    return seen.size();
  }
};

// The time-slices one input reported undeliverable.
struct Undeliverable {
  mutable std::mutex mutex;
  std::set<ns::TimesliceIndex> seen;

  void add(ns::TimesliceIndex t) {
    std::lock_guard lock(mutex);
    seen.insert(t);
  }
  std::set<ns::TimesliceIndex> copy() const {
    std::lock_guard lock(mutex);
    return seen;
  }
};

// The proposals one DDE replica sent, by (input, interval).
struct Proposals {
  mutable std::mutex mutex;
  std::map<std::pair<ns::InputIndex, ns::IntervalIndex>, ns::Proposal> sent;

  void add(ns::InputIndex i, const ns::Proposal& p) {
    std::lock_guard lock(mutex);
    sent.emplace(std::pair{i, p.interval}, p);
  }
  std::map<std::pair<ns::InputIndex, ns::IntervalIndex>, ns::Proposal> copy() const {
    std::lock_guard lock(mutex);
    return sent;
  }
};

class System;

struct SystemOptions {
  ns::SchedulerConfig config;
  ns::Mode mode = ns::Mode::best_effort;
  std::vector<ns::ComputeIndex> standby;       // slots that join later (TimesliceReceiver::join())
  std::vector<ns::InputIndex> standby_inputs;  // inputs that join later (TimesliceSender::join())
  // The inputs that say they are on standby, when not standby_inputs (a mismatch the compute nodes refuse).
  std::optional<std::vector<ns::InputIndex>> inputs_claiming_standby;
  std::uint32_t credits = 3;       // per input–compute pair: the receive buffer is sized for exactly this
  bool size_by_credits = false;    // the receivers get credits_per_input instead of receive_buffer_bytes
  std::uint32_t dde_replicas = 1;  // DFS or assignment by load: on compute nodes 0, 1, ... (standalone DdeServices)
  bool dde_in_receivers = false;   // the replicas run inside receivers 0, 1, ... (run_dde) instead
  std::chrono::nanoseconds incomplete_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds welcome_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds progress_timeout = sp::TimesliceSenderOptions{}.progress_timeout;
  std::chrono::microseconds slow_consumer{0};  // compute node 0's handler takes this long per time-slice
  // Called by every receiver's handler after recording the time-slice (on its loop thread).
  std::function<void(ns::ComputeIndex, const sp::TimesliceView&)> after_delivery;
  // When set, the receivers keep their complete time-slices (KeepingHandler): each is
  // recorded in deliveries() and then handed to this, on the receiver's loop thread.
  std::function<void(ns::ComputeIndex, sp::Timeslice)> keep;
  std::chrono::nanoseconds kept_stall_warning = sp::TimesliceReceiverOptions{}.kept_stall_warning;
  AdmissionOptions admission;  // the receivers' and the DDE replicas'
  // Called once the receivers and DDE replicas listen, before the input nodes connect.
  std::function<void(System&)> before_inputs;
};

// The small system the fault and membership tests run: 3 × 3, intervals of 12 time-slices
// (4 rounds), 3 credits per pair.
inline SystemOptions three_by_three(ns::Mode mode) {
  SystemOptions options;
  options.mode = mode;
  options.config.input_count = 3;
  options.config.compute_count = 3;
  options.config.timeslices_per_interval = 12;
  options.config.history_length = 3;
  options.credits = 3;
  return options;
}

class System {
 public:
  System(const std::string& base, SystemOptions options) : options_(std::move(options)) {
    const auto& config = options_.config;
    const auto endpoint = Endpoint::parse(base);
    buffer_bytes_ = std::uint64_t{options_.credits} * config.input_count * max_contribution;
    deliveries_ = std::vector<Deliveries>(config.compute_count);
    undeliverable_ = std::vector<Undeliverable>(config.input_count);
    incomplete_ = std::vector<Deliveries>(config.compute_count);
    for (ns::ComputeIndex c = 0; c < config.compute_count; ++c) {
      receiver_contexts_.push_back(std::make_unique<Context>(context_options()));
      sp::TimesliceReceiverOptions ro;
      ro.config = config;
      ro.compute = c;
      if (options_.size_by_credits)
        ro.credits_per_input = options_.credits;
      else
        ro.receive_buffer_bytes = buffer_bytes_;
      ro.max_contribution_bytes = max_contribution;
      ro.incomplete_timeout = options_.incomplete_timeout;
      ro.kept_stall_warning = options_.kept_stall_warning;
      ro.admission = options_.admission;
      ro.standby = std::find(options_.standby.begin(), options_.standby.end(), c) != options_.standby.end();
      ro.standby_inputs = options_.standby_inputs;
      ro.run_dde = uses_dde() && options_.dde_in_receivers && c < options_.dde_replicas;
      ro.on_incomplete = [this, c](const sp::TimesliceView& view) {
        incomplete_[c].add(view);
        deliveries_[c].add(view);  // in the one sequence of hand-overs too, to check the order
      };
      if (options_.keep) {
        receivers_.push_back(std::make_unique<sp::TimesliceReceiver>(
            *receiver_contexts_.back(), endpoint,
            [this, c](sp::Timeslice kept) {
              deliveries_[c].add(kept.view());
              options_.keep(c, std::move(kept));
            },
            ro));
        continue;
      }
      receivers_.push_back(std::make_unique<sp::TimesliceReceiver>(
          *receiver_contexts_.back(), endpoint,
          [this, c](const sp::TimesliceView& view) {
            deliveries_[c].add(view);
            if (c == 0 && options_.slow_consumer.count() > 0) std::this_thread::sleep_for(options_.slow_consumer);
            if (options_.after_delivery) options_.after_delivery(c, view);
          },
          ro));
    }
    proposals_ = std::vector<Proposals>(options_.dde_replicas);
    if (uses_dde() && !options_.dde_in_receivers) {
      for (std::uint32_t d = 0; d < options_.dde_replicas; ++d) {
        // Replica d on a context of its own (a receiver with run_dde shares its loop: tested apart).
        receiver_contexts_.push_back(std::make_unique<Context>(context_options()));
        ddes_.push_back(std::make_unique<sp::DdeService>(
            *receiver_contexts_.back(), endpoint, config,
            [this, d](ns::InputIndex i, const ns::Proposal& p) { proposals_[d].add(i, p); }, options_.admission,
            options_.standby_inputs));
      }
    }
    if (options_.before_inputs) options_.before_inputs(*this);
    for (ns::InputIndex i = 0; i < config.input_count; ++i) {
      sender_contexts_.push_back(std::make_unique<Context>(context_options()));
      senders_.push_back(std::make_unique<sp::TimesliceSender>(*sender_contexts_.back(), sender_options(i)));
    }
  }

  ~System() {
    senders_.clear();
    ddes_.clear();
    receivers_.clear();
  }

  // DFS's pacing or assignment by load: DDE replicas run.
  bool uses_dde() const { return options_.mode == ns::Mode::dfs || options_.config.assignment == ns::Assignment::load; }

  sp::TimesliceSenderOptions sender_options(ns::InputIndex i) const {
    sp::TimesliceSenderOptions so;
    so.config = options_.config;
    so.mode = options_.mode;
    so.input = i;
    for (const auto& r : receivers_) so.compute_endpoints.push_back(r->local_endpoint());
    for (const auto& d : ddes_) so.dde_endpoints.push_back(d->local_endpoint());
    for (const auto& r : receivers_) {
      if (auto dde = r->dde_endpoint()) so.dde_endpoints.push_back(*dde);
    }
    so.max_contribution_bytes = max_contribution;
    so.standby_computes = options_.standby;
    const auto& standby_inputs = options_.inputs_claiming_standby.value_or(options_.standby_inputs);
    so.standby = std::find(standby_inputs.begin(), standby_inputs.end(), i) != standby_inputs.end();
    so.welcome_timeout = options_.welcome_timeout;
    so.progress_timeout = options_.progress_timeout;
    so.on_undeliverable = [this, i](ns::TimesliceIndex t, ns::ComputeIndex) { undeliverable_[i].add(t); };
    return so;
  }

  // Pushes time-slices [from, to) on every input, one thread per input, then (with `finish`)
  // finish(). Returns what the pushes threw (nothing expected).
  std::vector<std::string> push_range(ns::TimesliceIndex from, ns::TimesliceIndex to, bool finish) {
    std::vector<std::string> errors(senders_.size());
    std::vector<std::thread> threads;
    for (ns::InputIndex i = 0; i < senders_.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          for (ns::TimesliceIndex t = from; t < to; ++t) senders_[i]->push(t, contribution(i, t));
          if (finish) senders_[i]->finish();
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    std::vector<std::string> failed;
    for (const auto& e : errors) {
      if (!e.empty()) failed.push_back(e);
    }
    return failed;
  }
  std::vector<std::string> push_all(ns::TimesliceIndex count) { return push_range(0, count, true); }

  std::uint64_t buffer_bytes() const { return buffer_bytes_; }
  sp::TimesliceSender& sender(ns::InputIndex i) { return *senders_.at(i); }
  std::unique_ptr<sp::TimesliceSender>& sender_slot(ns::InputIndex i) { return senders_.at(i); }
  sp::TimesliceReceiver& receiver(ns::ComputeIndex c) { return *receivers_.at(c); }
  std::unique_ptr<sp::TimesliceReceiver>& receiver_slot(ns::ComputeIndex c) { return receivers_.at(c); }
  std::unique_ptr<sp::DdeService>& dde_slot(std::size_t d) { return ddes_.at(d); }
  std::size_t dde_count() const { return ddes_.size(); }
  const Deliveries& deliveries(ns::ComputeIndex c) const { return deliveries_.at(c); }
  // What input i reported to on_undeliverable.
  std::set<ns::TimesliceIndex> undeliverable(ns::InputIndex i) const { return undeliverable_.at(i).copy(); }
  const Deliveries& incomplete(ns::ComputeIndex c) const { return incomplete_.at(c); }
  const Proposals& proposals(std::size_t replica) const { return proposals_.at(replica); }
  Context& sender_context(ns::InputIndex i) { return *sender_contexts_.at(i); }

 private:
  SystemOptions options_;
  std::uint64_t buffer_bytes_ = 0;
  // Declared before the sockets: contexts outlive everything made from them.
  std::vector<std::unique_ptr<Context>> receiver_contexts_;
  std::vector<std::unique_ptr<Context>> sender_contexts_;
  std::vector<Deliveries> deliveries_;
  mutable std::vector<Undeliverable> undeliverable_;  // filled by the senders (sender_options() is const)
  std::vector<Deliveries> incomplete_;
  std::vector<Proposals> proposals_;  // per standalone DDE replica
  std::vector<std::unique_ptr<sp::TimesliceReceiver>> receivers_;
  std::vector<std::unique_ptr<sp::DdeService>> ddes_;
  std::vector<std::unique_ptr<sp::TimesliceSender>> senders_;
};

// Receiver c's hand-overs (complete and incomplete) are exactly its time-slices below
// `count`, in order; every contribution present has the right bytes. Returns how many were
// incomplete.
inline std::size_t check_in_order(const System& system, ns::ComputeIndex c, std::uint32_t compute_count,
                                  ns::TimesliceIndex count) {
  const auto seen = system.deliveries(c).copy();
  std::vector<ns::TimesliceIndex> expected;
  for (ns::TimesliceIndex t = c; t < count; t += compute_count) expected.push_back(t);
  std::vector<ns::TimesliceIndex> got;
  std::size_t corrupt = 0;
  std::size_t incomplete = 0;
  for (const auto& d : seen) {
    got.push_back(d.t);
    if (!d.content_ok) ++corrupt;
    if (!d.complete) ++incomplete;
  }
  INFO("compute node " << c);
  CHECK(got == expected);
  CHECK(corrupt == 0);
  return incomplete;
}

// Checks on the test thread that receiver c was handed exactly its time-slices below
// `count` (c, c + M, ...), in order, complete and with the right bytes.
inline void check_complete_in_order(const System& system, ns::ComputeIndex c, std::uint32_t compute_count,
                                    ns::TimesliceIndex count) {
  const std::size_t incomplete = check_in_order(system, c, compute_count, count);
  INFO("compute node " << c);
  CHECK(incomplete == 0);
  CHECK(system.incomplete(c).count() == 0);
}

// Every time-slice below `count` reached the application of some compute node complete,
// with the right bytes, and any second copy with a higher attempt (one copy per attempt: a
// time-slice a lost node built just before it went is built again elsewhere, with attempt
// 1); incomplete hand-overs (a lost node giving up what it held) are not counted.
// Returns how many were built again (duplicates).
inline std::size_t check_each_built_once_per_attempt(const System& system, std::uint32_t compute_count,
                                                     ns::TimesliceIndex count) {
  std::map<ns::TimesliceIndex, std::vector<std::uint32_t>> attempts;
  std::size_t corrupt = 0;
  for (ns::ComputeIndex c = 0; c < compute_count; ++c) {
    for (const auto& d : system.deliveries(c).copy()) {
      if (!d.complete) continue;
      if (!d.content_ok) ++corrupt;
      attempts[d.t].push_back(d.attempt);
    }
  }
  CHECK(corrupt == 0);
  std::size_t missing = 0, same_attempt = 0, duplicates = 0;
  for (ns::TimesliceIndex t = 0; t < count; ++t) {
    auto& seen = attempts[t];
    if (seen.empty()) {
      ++missing;
      continue;
    }
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) ++same_attempt;
    duplicates += seen.size() - 1;
  }
  CHECK(missing == 0);
  CHECK(same_attempt == 0);
  return duplicates;
}

// Waits until each of the `compute_count` receivers was handed its share of `count`
// time-slices; false if that did not happen in time.
inline bool wait_all_delivered(const System& system, std::uint32_t compute_count, ns::TimesliceIndex count) {
  return eventually([&] {
    for (ns::ComputeIndex c = 0; c < compute_count; ++c) {
      if (system.deliveries(c).count() < count / compute_count) return false;
    }
    return true;
  });
}

// Under assignment by load the nodes' shares differ: `count` time-slices delivered in all.
inline bool wait_total_delivered(const System& system, std::uint32_t compute_count, ns::TimesliceIndex count) {
  return eventually([&] {
    std::size_t total = 0;
    for (ns::ComputeIndex c = 0; c < compute_count; ++c) total += system.deliveries(c).count();
    return total >= count;
  });
}

}  // namespace netio::test
