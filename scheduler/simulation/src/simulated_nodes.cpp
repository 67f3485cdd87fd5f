// SPDX-License-Identifier: MIT
#include "simulated_nodes.hpp"

#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/scheduler/credits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace netio::scheduler::simulation {

namespace {

constexpr detail::Rejecter reject{Errc::invalid_option, ""};

}  // namespace

SimulatedNodes::SimulatedNodes(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options,
                               SimulatedNetwork& network, RunRecorder& recorder)
    : system_(system),
      mode_(mode),
      options_(options),
      network_(network),
      recorder_(recorder),
      config_(system.scheduler),
      credits_(ns::credits_per_input(system.buffer_bytes, system.inputs(), system.contribution_bytes)),
      faults_(system.failure.has_value()) {
  // Clocks: one draw of offset and drift per node, from the spec's seed.
  emulated::Xoshiro256 clocks(system_.nodes[0].seed ^ 0x636c6f636b73ULL);  // "clocks"
  auto draw_clock = [&] {
    NodeClock clock;
    clock.offset = Duration{static_cast<Duration::rep>(
        std::llround((2 * clocks.uniform_open() - 1) * static_cast<double>(options_.max_clock_offset.count())))};
    clock.drift = (2 * clocks.uniform_open() - 1) * options_.max_clock_drift;
    return clock;
  };
  inputs_.reserve(system_.inputs());
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    std::vector<ns::ComputeIndex> standby;
    if (system_.membership && system_.membership->joins) standby.push_back(system_.membership->compute);
    const bool joins = system_.input_join && system_.input_join->input == i;
    // Under load the assignment naming its join starts it (InputNode); under the fixed
    // assignment start_at() does, once a compute node named the boundary.
    Input& in = inputs_.emplace_back(config_, i, mode_, standby, joins && config_.assignment == ns::Assignment::load);
    in.waiting_to_join = joins;
    in.clock = draw_clock();
    if (options_.timer_late.kind != DelayKind::none) in.late.emplace(system_.nodes[i].seed, timer_stream + i);
  }
  std::vector<ns::InputIndex> standby_inputs;
  if (system_.input_join) standby_inputs.push_back(system_.input_join->input);
  computes_.reserve(system_.computes());
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    Compute& compute = computes_.emplace_back(config_, c, credits_, standby_inputs);
    compute.clock = draw_clock();
    if (system_.membership) compute.node.accept_rerouted();
  }
  if (mode_ == ns::Mode::dfs) dde_.emplace(config_, standby_inputs);
  if (mode_ == ns::Mode::dfs && system_.computes() >= 2) replica_.emplace(config_, standby_inputs);
  if (config_.assignment == ns::Assignment::load) {
    assigner_.emplace(config_, standby_inputs);
    if (system_.computes() >= 2) assigner_replica_.emplace(config_, standby_inputs);
  }
}

std::uint64_t SimulatedNodes::handed_over() const {
  std::uint64_t count = 0;
  for (const auto& c : computes_) count += c.handed_over;
  return count;
}

void SimulatedNodes::finish(SimulationResult& result) {
  for (const auto& c : computes_) recorder_.peak(c.peak_held_bytes);
  // After a failover the replica left saw every report of the run: its safety net's statistics.
  const auto* dde = failed_over() && replica_ ? &*replica_ : dde_ ? &*dde_ : nullptr;
  recorder_.finish(result, dde ? std::optional{dde->fallback().stats()} : std::nullopt);
  auto& records = result.records;
  if (limit_set_) records.expected_timeslices = limit_;
  if (failed_at_) {
    records.failed_at = *failed_at_;
    records.computes_failed = 1;
    records.proposals_after_failure = proposals_after_failure_;
    records.assignments_after_failure = assignments_after_failure_;
    const auto c = system_.failure->compute;
    if ((dde_ || assigner_) && (c == 0 || (c == 1 && (replica_ || assigner_replica_))))
      records.dde_replicas_lost.push_back(c);
  }
  if (membership_at_) {
    records.membership_at = *membership_at_;
    (system_.membership->joins ? records.computes_joined : records.computes_drained) = 1;
    if (system_.membership->joins) records.joined_compute = system_.membership->compute;
  }
  if (input_join_from_) {
    records.membership_at = input_join_at_;
    records.inputs_joined = 1;
    records.input_join_from = *input_join_from_;
  }
  for (const auto& in : inputs_) {
    records.contributions_reassigned += in.reassigned;
    std::uint32_t lost = 0;
    for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) lost += in.node.lost(c) ? 1 : 0;
    records.computes_lost = std::max(records.computes_lost, lost);
  }
}

void SimulatedNodes::start() {
  if (system_.timeslices) {
    limit_ = *system_.timeslices;
    limit_set_ = true;
  } else {
    network_.at(Time{system_.duration}, [this] { end_of_duration(); });
  }
  const std::uint32_t n = system_.inputs();
  for (ns::InputIndex i = 0; i < n; ++i) {
    // The hello on every data connection; the welcome comes back as a reply with the credits.
    for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
      network_.transmit(network_.data(i, c), i, n + c, hello_bytes, true, [this, i, c, n] {
        network_.transmit(network_.reply(c, i), n + c, i, reply_bytes, false, [this, i, c] {
          inputs_[i].node.grant(c, credits_);
          drive(i);
        });
      });
    }
    if (dde_) {
      // The start handshake once the control connection is up.
      send_clock_probe(i, 0, std::nullopt);
    }
  }
  network_.at(Time{system_.sample_period}, [this] { sample_fill(); });
  if (const auto& failure = system_.failure) network_.at(Time{failure->at}, [this, c = failure->compute] { fail(c); });
  if (const auto& change = system_.membership) network_.at(Time{change->at}, [this] { change_membership(); });
  if (const auto& joining = system_.input_join) network_.at(Time{joining->at}, [this] { request_input_join(); });
}

void SimulatedNodes::drive(ns::InputIndex i) {
  using What = ns::InputNode::Next::What;
  auto& in = inputs_[i];
  if (in.waiting_to_join) return;  // sends nothing until it knows its boundary
  bool posted = false;
  if (faults_) send_reassigned(i);
  for (;;) {
    const Time local = in.clock.local(network_.now());
    const auto next = in.node.next(local);
    if (next.what == What::wait_until) {
      arm(i, next.due);
      break;
    }
    if (next.what != What::send && next.what != What::skip)
      break;                         // a credit, an acknowledgement or an assignment calls again
    if (next.timeslice >= limit_) {  // not pushed: the run ends below it
      // A last round that is not whole: this input's place in it comes before time-slices it
      // sends, and is passed over (as TimesliceSender does after finish()).
      if (!limit_set_ || !in.node.layout().beyond_the_end(next.timeslice, limit_)) break;
      if (auto done = in.node.on_skipped(next.timeslice, local)) report(i, *done);
      continue;
    }
    if (next.what == What::skip) {
      // A lost node's time-slice goes to another (send_reassigned()); as the pattern's
      // bounded queue, a few wait at most (a credit calls again).
      if (in.to_reassign.size() >= 2 * std::size_t{system_.computes()}) break;
      in.to_reassign.emplace(next.timeslice, Retained{next.compute, next.compute, 0});
      if (auto done = in.node.on_skipped(next.timeslice, local)) report(i, *done);
    } else {
      in.node.on_sent(next.timeslice, local);
      if (faults_) in.retained.emplace(next.timeslice, Retained{next.compute, next.compute, 0});
      note_plan(in, next.timeslice);
      posted = send_contribution(i, next.compute, next.timeslice, 0) || posted;
    }
    if (const auto sample = in.node.take_clock_sample()) send_clock_sample(i, *sample);
    if (const auto load = in.node.take_load_report()) send_load_report(i, *load);
    if (next.what == What::skip) send_reassigned(i);
  }
  if (posted) network_.network_changed();
}

bool SimulatedNodes::send_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t,
                                       std::uint8_t attempt) {
  const auto subject = contribution_subject(t, attempt);
  if (options_.network == NetworkModel::lossless) {
    network_.post(i, c, system_.contribution_bytes, subject);
    return true;
  }
  Message message;
  message.kind = Message::Kind::contribution;
  message.subject = subject;
  network_.transmit(network_.data(i, c), i, system_.inputs() + c, contribution_header + system_.contribution_bytes,
                    true, message);
  return false;
}

void SimulatedNodes::send_reply(ns::ComputeIndex c, ns::InputIndex i, Message::Kind kind, ns::TimesliceIndex t) {
  Message reply;
  reply.kind = kind;
  reply.subject = t;
  network_.transmit(network_.reply(c, i), system_.inputs() + c, i, reply_bytes, false, reply);
}

void SimulatedNodes::fail(ns::ComputeIndex c) {
  computes_[c].dead = true;
  failed_at_ = network_.now();
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) lose(i, c);
  if (c == 0 && failed_over()) fail_over();
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) drive(i);
  check_done();
}

void SimulatedNodes::fail_over() {
  // The pattern's replica sent these as it decided them; the inputs take what is new to them.
  std::vector<ns::AddressedProposal> latest;
  for (const auto& [input, proposal] : replica_latest_) latest.push_back({input, proposal});
  send_replica_proposals(latest);
  if (assigner_replica_) send_assignments(assigner_replica_->decided_from(0), true);
}

void SimulatedNodes::change_membership() {
  // As TimesliceReceiver::State::boundary_ahead() and its notice to every input.
  const auto& change = *system_.membership;
  membership_at_ = network_.now();
  if (config_.assignment == ns::Assignment::load) {
    // As TimesliceReceiver::State::request_drain_by_load() and join(): the node asks every
    // input; the coordinator names the boundary in a decision (Assigner), which the inputs
    // apply as they take it (InputNode::on_assignment()).
    for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
      network_.transmit(network_.reply(change.compute, i), system_.inputs() + change.compute, i, reply_bytes, false,
                        [this, i, change] { (void)inputs_[i].node.request_change(change.compute, change.joins); });
    }
    return;
  }
  const ns::ComputeIndex namer = change.joins ? 0 : change.compute;
  const ns::MembershipChange notice{change.compute, change.joins, boundary_ahead(namer)};
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    network_.transmit(network_.reply(namer, i), system_.inputs() + namer, i, reply_bytes, false, [this, i, notice] {
      (void)inputs_[i].node.on_membership(notice);
      drive(i);
    });
  }
}

ns::TimesliceIndex SimulatedNodes::boundary_ahead(ns::ComputeIndex c) const {
  // As TimesliceReceiver::State::boundary_ahead(): an input is at most its credits' worth of
  // c's places (one a round) ahead of what c received from it.
  const auto m = std::uint64_t{system_.computes()};
  const auto n = config_.timeslices_in_interval();
  const auto bound = computes_[c].highest_received + (std::uint64_t{credits_} + 2) * m;
  return (bound + n - 1) / n * n;
}

void SimulatedNodes::request_input_join() {
  // As TimesliceSender::State::request_join(): {x, 0} on the joiner's data connection to the
  // lowest member compute node it has not lost.
  const auto x = system_.input_join->input;
  input_join_at_ = network_.now();
  if (config_.assignment == ns::Assignment::load) {
    // As TimesliceSender::State::request_join() by load: {x, 0} to every DDE replica, which
    // passes it on to every input (relay_input_join_request()); the Assigner names T.
    if (!first_replica_dead()) {
      network_.transmit(network_.control(x), x, system_.inputs(), reply_bytes, true, [this, x] {
        if (!first_replica_dead()) relay_input_join_request(x, false);
      });
    }
    if (assigner_replica_ && !computes_[1].dead) {
      network_.transmit(network_.replica_control(x), x, system_.inputs() + 1, reply_bytes, true, [this, x] {
        if (!computes_[1].dead) relay_input_join_request(x, true);
      });
    }
    return;
  }
  const auto& in = inputs_[x];
  constexpr auto ever = std::numeric_limits<ns::TimesliceIndex>::max();
  for (ns::ComputeIndex m = 0; m < system_.computes(); ++m) {
    if (in.node.lost(m) || computes_[m].dead || !in.node.membership().member(m, ever)) continue;
    network_.transmit(network_.data(x, m), x, system_.inputs() + m, reply_bytes, true,
                      [this, m] { name_input_boundary(m); });
    return;
  }
  reject(fmt::format("simulation: input {} asks to join with no member compute node left", x));
}

void SimulatedNodes::relay_input_join_request(ns::InputIndex x, bool by_replica) {
  // As DdeService's relay: {x, 0} as a reply to every input, which flags it in its load
  // reports until a decision names x's join (InputNode::request_input_join()). A replica that
  // arrives second finds it asked already.
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    if (i == x) continue;
    auto& link = by_replica ? network_.replica_control_reply(i) : network_.control_reply(i);
    network_.transmit(link, system_.inputs() + (by_replica ? 1 : 0), i, reply_bytes, false,
                      [this, i, x] { (void)inputs_[i].node.request_input_join(x); });
  }
}

void SimulatedNodes::name_input_boundary(ns::ComputeIndex namer) {
  // As TimesliceReceiver::State::on_input_join(): the boundary, told to every input on the
  // reply connection, ordered before any credit returned from now on.
  const auto x = system_.input_join->input;
  const auto from = boundary_ahead(namer);
  (void)computes_[namer].node.on_input_joins(x, from);
  for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
    network_.transmit(network_.reply(namer, i), system_.inputs() + namer, i, reply_bytes, false,
                      [this, i, namer, from] { take_input_boundary(i, namer, from); });
  }
}

void SimulatedNodes::take_input_boundary(ns::InputIndex i, std::optional<ns::ComputeIndex> namer,
                                         ns::TimesliceIndex from) {
  // As TimesliceSender::State::take_input_join(): passed on to every compute node but the one
  // that named it (on the data connection, ahead of any later contribution) and to every DDE
  // replica (on the control connection, ahead of any later report); the joiner starts at it.
  auto& in = inputs_[i];
  if (in.told_join) return;
  in.told_join = true;
  const auto x = system_.input_join->input;
  for (ns::ComputeIndex d = 0; d < system_.computes(); ++d) {
    if (d == namer || computes_[d].dead || in.node.lost(d)) continue;
    computes_[d].input_join_in_flight.emplace(i, from);
    network_.transmit(network_.data(i, d), i, system_.inputs() + d, reply_bytes, true,
                      [this, d, i] { tell_compute_input_joins(d, i); });
  }
  const auto interval = from / config_.timeslices_in_interval();
  if (dde_ && !first_replica_dead()) {
    network_.transmit(network_.control(i), i, system_.inputs(), reply_bytes, true, [this, x, interval] {
      if (!first_replica_dead()) (void)dde_->on_input_joins(x, interval);
    });
  }
  if (replica_ && !computes_[1].dead) {
    network_.transmit(network_.replica_control(i), i, system_.inputs() + 1, reply_bytes, true, [this, x, interval] {
      if (!computes_[1].dead) (void)replica_->on_input_joins(x, interval);
    });
  }
  if (i == x) {
    // Under load its join's assignment started it (InputNode::on_assignment()).
    if (config_.assignment == ns::Assignment::fixed) in.node.start_at(from);
    in.waiting_to_join = false;
    input_join_from_ = from;
  }
  drive(i);
}

void SimulatedNodes::tell_compute_input_joins(ns::ComputeIndex c, ns::InputIndex from_input) {
  auto& compute = computes_[c];
  const auto it = compute.input_join_in_flight.find(from_input);
  if (it == compute.input_join_in_flight.end() || compute.dead) return;  // applied already
  (void)compute.node.on_input_joins(system_.input_join->input, it->second);
  compute.input_join_in_flight.erase(it);
}

void SimulatedNodes::lose(ns::InputIndex i, ns::ComputeIndex c) {
  // As TimesliceSender::State::lose() and reassign_from(): the engine counts what c owed as
  // acknowledged; every other node hears which of c's time-slices this input knows built
  // there (on the data connection, before any reassigned contribution); what c holds of this
  // input's, and did not credit, waits to go elsewhere.
  auto& in = inputs_[i];
  if (in.node.lost(c)) return;
  for (const auto& done : in.node.on_compute_lost(c, in.clock.local(network_.now()))) report(i, done);
  const std::vector<ns::TimesliceIndex> built(in.recently_built[c].begin(), in.recently_built[c].end());
  for (ns::ComputeIndex d = 0; d < system_.computes(); ++d) {
    if (d == c || computes_[d].dead) continue;
    network_.transmit(network_.data(i, d), i, system_.inputs() + d, reply_bytes + 8 * built.size(), true,
                      [this, d, built] { on_lost_compute(d, built); });
  }
  for (auto it = in.retained.begin(); it != in.retained.end();) {
    if (it->second.compute != c) {
      ++it;
      continue;
    }
    in.to_reassign.insert_or_assign(it->first, it->second);
    it = in.retained.erase(it);
  }
  in.reassigned_out[c] = 0;
}

void SimulatedNodes::send_reassigned(ns::InputIndex i) {
  // As TimesliceSender::State::send_reassigned(): each to the node reroute() names, in index
  // order, as far as that node's window (its credits) allows.
  auto& in = inputs_[i];
  if (in.to_reassign.empty()) return;
  std::vector<bool> lost(system_.computes());
  for (ns::ComputeIndex d = 0; d < system_.computes(); ++d) lost[d] = in.node.lost(d);
  std::vector<bool> blocked(system_.computes(), false);
  bool posted = false;
  for (auto it = in.to_reassign.begin(); it != in.to_reassign.end();) {
    const auto t = it->first;
    const auto where = ns::reroute(t, it->second.own, lost);
    if (!where) reject(fmt::format("simulation: input {} lost every compute node", i));
    const auto target = where->compute;
    if (blocked[target] || in.reassigned_out[target] >= in.node.granted(target)) {
      blocked[target] = true;  // later ones to it wait too: index order
      ++it;
      continue;
    }
    ++in.reassigned_out[target];
    ++in.reassigned;
    in.retained.insert_or_assign(t, Retained{it->second.own, target, where->attempt});
    posted = send_contribution(i, target, t, where->attempt) || posted;
    it = in.to_reassign.erase(it);
  }
  if (posted) network_.network_changed();
}

void SimulatedNodes::on_lost_compute(ns::ComputeIndex c, const std::vector<ns::TimesliceIndex>& built) {
  // As TimesliceReceiver::State::on_lost_compute(): what the lost node built is not built here.
  auto& compute = computes_[c];
  if (compute.dead) return;
  for (const auto t : built) {
    const auto owed = compute.node.on_built_elsewhere(t);
    if (owed.empty()) continue;
    if (const auto it = compute.reassigned_held.find(t); it != compute.reassigned_held.end()) {
      compute.held_bytes -= it->second.bytes;
      compute.reassigned_held.erase(it);
    }
    for (const ns::InputIndex i : owed) send_reply(c, i, Message::Kind::credit, t);
  }
}

void SimulatedNodes::arm(ns::InputIndex i, Time due) {
  auto& in = inputs_[i];
  // The pattern's due timer: a newer one replaces the older.
  const Duration late = in.late ? draw(*in.late, options_.timer_late) : Duration{0};
  network_.arm_due(i, in.clock.true_time(due) + late);
}

void SimulatedNodes::note_plan(Input& in, ns::TimesliceIndex t) {
  const auto* engine = in.node.engine();
  if (engine == nullptr) return;
  const auto j = engine->layout().interval_of(t);
  if (in.plans.contains(j)) return;
  auto plan = engine->plan(j);
  if (plan && plan->best_effort) plan.reset();  // the DDE's fallback: no pace to record
  in.plans.emplace(j, plan);
}

void SimulatedNodes::report(ns::InputIndex i, const ns::IntervalCompletion& done) {
  auto& in = inputs_[i];
  IntervalRecord r;
  r.input = i;
  r.interval = done.report.interval;
  r.actual_start = in.clock.true_time(done.report.start);
  r.actual_duration = done.report.duration;
  if (const auto it = in.plans.find(done.report.interval); it != in.plans.end()) {
    if (it->second) {
      r.proposed_start = in.clock.true_time(it->second->start);
      r.proposed_duration = it->second->duration;
    }
    in.plans.erase(in.plans.begin(), std::next(it));
  }
  recorder_.interval(r);
  if (!dde_) return;
  // The report and the request, one after the other on the control connection (to a replica
  // whose node is gone, nothing: the input dropped it).
  if (!first_replica_dead())
    network_.transmit(network_.control(i), i, system_.inputs(), report_bytes, true, [this, done] { on_report(done); });
  if (replica_ && !computes_[1].dead) {
    network_.transmit(network_.replica_control(i), i, system_.inputs() + 1, report_bytes, true,
                      [this, done] { on_replica_report(done); });
  }
}

void SimulatedNodes::on_acknowledged(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t) {
  if (computes_[c].dead) return;  // its connection is gone
  auto& in = inputs_[i];
  if (auto done = in.node.on_acknowledged(t, in.clock.local(network_.now()))) report(i, *done);
  drive(i);
}

void SimulatedNodes::on_credit(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t) {
  if (computes_[c].dead) return;  // its connection is gone
  auto& in = inputs_[i];
  bool reassigned = false;
  if (faults_) {
    // As TimesliceSender::State::release(): c built t (or gave it up), the copy goes.
    const auto it = in.retained.find(t);
    if (it == in.retained.end() || it->second.compute != c) {
      reject(fmt::format("simulation: compute node {} credited input {} for time-slice {}, not outstanding there", c, i,
                         t));
    }
    reassigned = it->second.attempt > 0;
    in.retained.erase(it);
    if (reassigned) --in.reassigned_out[c];
    auto& built = in.recently_built[c];
    built.push_back(t);
    while (built.size() > 2 * std::size_t{std::max(in.node.granted(c), 1u)}) built.pop_front();
  }
  if (!reassigned) in.node.on_credit(c);  // a reassigned one is outside the credits
  drive(i);
  check_done();
}

void SimulatedNodes::on_proposal(ns::InputIndex i, const ns::Proposal& proposal) {
  if (inputs_[i].node.on_proposal(proposal) && failed_at_) ++proposals_after_failure_;
  drive(i);
}

void SimulatedNodes::send_clock_sample(ns::InputIndex i, const ns::ClockProbe& sample) {
  // On the control connections, as the pattern sends it, to both replicas.
  if (!dde_) return;
  if (!first_replica_dead()) {
    network_.transmit(network_.control(i), i, system_.inputs(), probe_bytes, true, [this, sample] {
      if (!first_replica_dead()) dde_->on_clock_sample(sample, computes_.front().clock.local(network_.now()));
    });
  }
  if (replica_ && !computes_[1].dead) {
    network_.transmit(network_.replica_control(i), i, system_.inputs() + 1, probe_bytes, true, [this, sample] {
      if (!computes_[1].dead) replica_->on_clock_sample(sample, computes_[1].clock.local(network_.now()));
    });
  }
}

void SimulatedNodes::send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip) {
  auto& in = inputs_[i];
  const ns::ClockProbe probe{i, sequence, in.clock.local(network_.now()), round_trip};
  network_.transmit(network_.control(i), i, system_.inputs(), probe_bytes, true, [this, probe] {
    const auto echo = dde_->on_clock_probe(probe, computes_.front().clock.local(network_.now()));
    network_.transmit(
        network_.control_reply(probe.input), system_.inputs(), probe.input, probe_bytes, false, [this, probe, echo] {
          if (echo.sequence == 0) {
            send_clock_probe(probe.input, 1, inputs_[probe.input].clock.local(network_.now()) - echo.probe_sent_at);
          }
        });
  });
}

void SimulatedNodes::on_contribution(ns::InputIndex i, ns::ComputeIndex c, std::uint64_t subject, std::uint64_t bytes) {
  auto& compute = computes_[c];
  if (compute.dead) return;  // its connection is gone
  // An input's notice of the joiner's boundary, sent before this: it comes first.
  if (!compute.input_join_in_flight.empty()) tell_compute_input_joins(c, i);
  const auto t = subject_timeslice(subject);
  const auto attempt = subject_attempt(subject);
  compute.highest_received = std::max(compute.highest_received, t);
  const Time local = compute.clock.local(network_.now());
  // A reassigned one (attempt > 0) is not acknowledged: the input's DFS engine counted it as skipped.
  const bool acknowledge = mode_ == ns::Mode::dfs && attempt == 0;
  const auto arrival =
      attempt > 0 ? compute.node.on_reassigned(i, t, attempt, local) : compute.node.on_contribution(i, t, local);
  if (arrival == ns::ComputeNode::Arrival::late) {  // built elsewhere or given up: the credit goes back at once
    if (acknowledge) send_reply(c, i, Message::Kind::acknowledgement, t);
    send_reply(c, i, Message::Kind::credit, t);
    return;
  }
  if (arrival != ns::ComputeNode::Arrival::accepted && arrival != ns::ComputeNode::Arrival::completes) {
    reject(fmt::format("simulation: compute node {} refused input {}'s contribution to time-slice {}", c, i, t));
  }
  Held* slot = nullptr;
  if (attempt > 0) {
    slot = &compute.reassigned_held[t];
  } else {
    if (compute.held.empty()) compute.held_base = t;
    if (t < compute.held_base) {  // a joining input may reach a time-slice before the others reach an older one
      compute.held.insert(compute.held.begin(), compute.held_base - t, Held{});
      compute.held_base = t;
    }
    const std::uint64_t k = t - compute.held_base;
    if (k >= compute.held.size()) compute.held.resize(k + 1);
    slot = &compute.held[k];
  }
  auto& held = *slot;
  held.present = true;
  if (held.bytes == 0) held.first = network_.now();
  held.last = network_.now();
  held.bytes += bytes;
  compute.held_bytes += bytes;
  compute.peak_held_bytes = std::max(compute.peak_held_bytes, compute.held_bytes);
  if (acknowledge) send_reply(c, i, Message::Kind::acknowledgement, t);
  deliver(c);
}

void SimulatedNodes::deliver(ns::ComputeIndex c) {
  auto& compute = computes_[c];
  while (const auto ready = compute.node.next_ready(compute.clock.local(network_.now()), Duration{0})) {
    const auto t = ready->timeslice;
    Held held;  // complete: present
    if (ready->attempt > 0) {
      const auto it = compute.reassigned_held.find(t);
      held = it->second;
      compute.reassigned_held.erase(it);
    } else {
      Held& own = compute.held[t - compute.held_base];
      held = own;
      own = Held{};
      while (!compute.held.empty() && !compute.held.front().present) {
        compute.held.pop_front();
        ++compute.held_base;
      }
    }
    TimesliceRecord r;
    r.timeslice = t;
    r.compute = c;
    r.complete = ready->complete;
    r.first_arrival = held.first;
    r.last_arrival = held.last;
    r.handed_over = network_.now();
    r.bytes = held.bytes;
    r.attempt = ready->attempt;
    recorder_.timeslice(r);
    compute.held_bytes -= held.bytes;
    ++compute.handed_over;
    for (const ns::InputIndex i : compute.node.release(t)) send_reply(c, i, Message::Kind::credit, t);
  }
  check_done();
}

void SimulatedNodes::on_report(const ns::IntervalCompletion& done) {
  if (first_replica_dead()) return;  // the DDE's node failed
  const Time local = computes_.front().clock.local(network_.now());
  send_proposals(dde_->on_report(done.report, local));
  send_proposals(dde_->on_request(done.request));
}

void SimulatedNodes::on_replica_report(const ns::IntervalCompletion& done) {
  if (computes_[1].dead) return;  // the replica's node failed
  const Time local = computes_[1].clock.local(network_.now());
  auto proposals = replica_->on_report(done.report, local);
  for (auto& p : replica_->on_request(done.request)) proposals.push_back(p);
  for (const auto& [input, proposal] : proposals) replica_latest_.insert_or_assign(input, proposal);
  if (failed_over()) {
    send_replica_proposals(proposals);
    return;
  }
  for (const auto& [input, proposal] : proposals) compare_with_other_replica(input, proposal);
}

void SimulatedNodes::send_replica_proposals(const std::vector<ns::AddressedProposal>& proposals) {
  for (const auto& [input, proposal] : proposals) {
    network_.transmit(network_.replica_control_reply(input), system_.inputs() + 1, input, probe_bytes, false,
                      [this, i = input, p = proposal] {
                        if (!computes_[1].dead) on_proposal(i, p);
                      });
  }
}

void SimulatedNodes::compare_with_other_replica(ns::InputIndex input, const ns::Proposal& proposal) {
  recorder_.proposed(input, proposal.interval, inputs_[input].clock.true_time(proposal.start));
}

void SimulatedNodes::send_proposals(const std::vector<ns::AddressedProposal>& proposals) {
  for (const auto& [input, proposal] : proposals) {
    if (replica_) compare_with_other_replica(input, proposal);
    network_.transmit(network_.control_reply(input), system_.inputs(), input, probe_bytes, false,
                      [this, i = input, p = proposal] {
                        if (!first_replica_dead()) on_proposal(i, p);  // nothing it sent arrives after
                      });
  }
}

void SimulatedNodes::send_load_report(ns::InputIndex i, const ns::LoadReport& report) {
  // On the control connections, as the reports to the DDE.
  const std::uint64_t bytes = report_bytes + 2 * std::uint64_t{system_.computes()};
  if (!first_replica_dead()) {
    network_.transmit(network_.control(i), i, system_.inputs(), bytes, true, [this, report] {
      if (!first_replica_dead()) send_assignments(assigner_->on_report(report));
    });
  }
  if (assigner_replica_ && !computes_[1].dead) {
    network_.transmit(network_.replica_control(i), i, system_.inputs() + 1, bytes, true, [this, report] {
      if (computes_[1].dead) return;
      const auto decided = assigner_replica_->on_report(report);
      if (failed_over())
        send_assignments(decided, true);
      else
        compare_assignments(decided);
    });
  }
}

void SimulatedNodes::send_assignments(const std::vector<ns::IntervalAssignment>& assignments, bool by_replica) {
  const std::uint64_t bytes = probe_bytes + 4 * std::uint64_t{system_.computes()};
  const ns::ComputeIndex c = by_replica ? 1 : 0;
  for (const auto& assignment : assignments) {
    if (by_replica)
      recorder_.assigned_by_replica(assignment);
    else
      recorder_.assigned(assignment);
    for (ns::InputIndex i = 0; i < system_.inputs(); ++i) {
      auto& link = by_replica ? network_.replica_control_reply(i) : network_.control_reply(i);
      network_.transmit(link, system_.inputs() + c, i, bytes, false, [this, i, c, assignment] {
        if (computes_[c].dead) return;  // nothing it sent arrives after
        if (!inputs_[i].node.on_assignment(assignment)) return;
        // An input joining (load): as the fixed path's boundary, passed on ahead of what
        // this input sends into the interval; the joiner starts there (on_assignment() did).
        for (const auto& join : assignment.input_joins) take_input_boundary(i, std::nullopt, join.from);
        if (failed_at_) ++assignments_after_failure_;
        drive(i);
      });
    }
  }
}

void SimulatedNodes::compare_assignments(const std::vector<ns::IntervalAssignment>& assignments) {
  for (const auto& assignment : assignments) {
    // The replica decides from the same reports, so the same; it may decide first, then the
    // first one's is still to come and is compared when it is made (recorder_.assigned).
    recorder_.replica_assigned(assignment);
  }
}

void SimulatedNodes::sample_fill() {
  if (done_) return;
  for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
    if (!computes_[c].dead) recorder_.fill(network_.now(), c, computes_[c].held_bytes);
  }
  network_.at(network_.now() + system_.sample_period, [this] { sample_fill(); });
}

void SimulatedNodes::end_of_duration() {
  // As the socket run: the furthest any input has come, rounded up to a whole interval, plus one.
  std::uint64_t furthest = 0;
  for (const auto& in : inputs_) furthest = std::max(furthest, in.node.sent_count());
  const auto interval = config_.timeslices_in_interval();
  limit_ = (furthest / interval + 2) * interval;
  limit_set_ = true;
  check_done();
}

void SimulatedNodes::check_done() {
  // As the socket run ends: every time-slice handed over, and every input holds all its
  // credits again (so it has every acknowledgement, and reported its last interval).
  if (!limit_set_ || done_) return;
  if (handed_over() < limit_) return;
  for (const auto& in : inputs_) {
    // With a failure: every time-slice below the end sent or rerouted, and every copy credited.
    if (faults_ && (in.node.sent_count() < limit_ || !in.retained.empty() || !in.to_reassign.empty())) return;
    for (ns::ComputeIndex c = 0; c < system_.computes(); ++c) {
      if (in.node.lost(c)) continue;
      if (in.node.available(c) != in.node.granted(c)) return;
    }
  }
  done_ = true;
}

}  // namespace netio::scheduler::simulation
