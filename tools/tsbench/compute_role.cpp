// SPDX-License-Identifier: MIT
#include "tsbench/compute_role.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/error.hpp"
#include "tsbench/contribution_stamp.hpp"
#include "tsbench/report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace netio::tools::tsbench {

namespace {

ns::Time now() { return std::chrono::steady_clock::now().time_since_epoch(); }

// One write() per line: what the kernel took survives the process (kill -9 included).
void append_line(int fd, const std::string& line) {
  if (fd >= 0) (void)!::write(fd, line.data(), line.size());
}

}  // namespace

ComputeRole::ComputeRole(Context& context, ComputeRoleOptions options)
    : context_(context), options_(std::move(options)) {
  const auto& bench = options_.bench;
  records_.buffer_bytes = bench.buffer_bytes;
  records_.timeslices_per_interval = bench.scheduler_config().timeslices_in_interval();
  records_.warmup_intervals = bench.warmup_intervals;
  if (!options_.journal.empty()) {
    journal_fd_ = ::open(options_.journal.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (journal_fd_ < 0) {
      throw Error(Errc::invalid_option, "cannot write " + options_.journal + ": " + std::strerror(errno));
    }
    append_line(journal_fd_, std::string(timeslices_csv_header) + "\n");
  }

  scheduled_push::TimesliceReceiverOptions ro;
  ro.config = bench.scheduler_config();
  ro.compute = options_.compute;
  ro.receive_buffer_bytes = bench.buffer_bytes;
  ro.max_contribution_bytes = bench.contribution_bytes;
  ro.incomplete_timeout = bench.incomplete_timeout;
  ro.run_dde = options_.run_dde;
  ro.standby = options_.standby;
  if (const auto input = bench.standby_input()) ro.standby_inputs = {*input};  // --join 'input,at=T'
  ro.dde_endpoint = options_.dde_local;
  ro.on_incomplete = [this](const scheduled_push::TimesliceView& view) { on_timeslice(view); };
  receiver_ = std::make_unique<scheduled_push::TimesliceReceiver>(
      context_, options_.local, [this](const scheduled_push::TimesliceView& view) { on_timeslice(view); }, ro);
  sampler_ = context_.loop().add_timer(bench.sample_period, bench.sample_period, [this] { sample_fill(); });
}

ComputeRole::~ComputeRole() {
  if (receiver_) (void)take_records();
  if (journal_fd_ >= 0) ::close(journal_fd_);
}

Endpoint ComputeRole::endpoint() const { return receiver_->local_endpoint(); }
std::optional<Endpoint> ComputeRole::dde_endpoint() const { return receiver_->dde_endpoint(); }

std::uint64_t ComputeRole::share_of(ns::TimesliceIndex count) const {
  // By load, or with a node draining or joining: no share known in advance.
  if (options_.bench.assignment == ns::Assignment::load || !options_.bench.drain.empty() ||
      !options_.bench.join.empty())
    return 0;
  const auto m = options_.bench.computes;
  return count / m + (count % m > options_.compute ? 1 : 0);
}

void ComputeRole::on_timeslice(const scheduled_push::TimesliceView& view) {
  TimesliceRecord r;
  r.timeslice = view.index;
  r.compute = options_.compute;
  r.complete = view.complete;
  r.first_arrival = view.first_arrival - options_.origin;
  r.last_arrival = view.last_arrival - options_.origin;
  r.handed_over = now() - options_.origin;
  r.attempt = view.attempt;
  if (const auto x = options_.bench.standby_input();
      x && view.contributed[*x] != 0 && (!first_with_joiner_ || view.index < *first_with_joiner_))
    first_with_joiner_ = view.index;
  for (ns::InputIndex i = 0; i < view.contributions.size(); ++i) {
    if (view.contributed[i] == 0) continue;
    r.bytes += view.contributions[i].size();
    if (!stamp_matches(view.contributions[i], view.index, i)) ++records_.corrupt;
  }
  records_.timeslices.push_back(r);
  append_line(journal_fd_, timeslice_csv_row(r));
  handed_over_.fetch_add(1, std::memory_order_release);
}

void ComputeRole::sample_fill() {
  const auto held = receiver_->stats().held_bytes;
  records_.fill.push_back(FillSample{now() - options_.origin, options_.compute,
                                     100.0 * static_cast<double>(held) / static_cast<double>(records_.buffer_bytes)});
}

RunRecords ComputeRole::take_records() {
  context_.loop().run_sync([this] { context_.loop().cancel_timer(sampler_); });
  const auto stats = receiver_->stats();
  const auto peak = stats.peak_held_bytes;
  records_.inputs_joined = stats.inputs_joined;  // --join 'input,at=T': standby inputs whose boundary it knows
  if (first_with_joiner_ && stats.inputs_joined > 0)
    records_.input_join_from = *first_with_joiner_ - *first_with_joiner_ % records_.timeslices_per_interval;
  if (const auto dde = receiver_->dde_stats()) {
    scheduler::FallbackStats fallback;
    fallback.engaged = dde->fallbacks;
    fallback.best_effort_intervals = dde->best_effort_intervals;
    fallback.engaged_on_spread = dde->fallbacks_on_spread;
    records_.fallback = fallback;
    // Assignment by load: the coordinator's current assignment (its replica's on compute node 1).
    if (dde->assignment == scheduler::Assignment::load && !dde->assigned_shares.empty())
      records_.assignments = {{dde->assigned_interval, dde->assigned_shares}};
  }
  receiver_.reset();  // no handler runs after this
  records_.peak_fill_percent = 100.0 * static_cast<double>(peak) / static_cast<double>(records_.buffer_bytes);
  return std::move(records_);
}

}  // namespace netio::tools::tsbench
