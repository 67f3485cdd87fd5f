// SPDX-License-Identifier: MIT
// The simulator's nodes: N inputs and M compute nodes, each with its engine (InputNode,
// ComputeNode; DFS: the DDE on compute node 0 and a second replica on compute node 1) and its
// clock, driven exactly as the scheduled-push pattern drives them (TimesliceSender::drive,
// TimesliceReceiver::deliver, DdeService). They send through the network (SimulatedNetwork),
// take what it delivers (NetworkReceiver), and tell the recorder (RunRecorder) what happened.
// A compute node's failure (SimulatedSystem::failure) as the pattern meets it: every input
// loses it at once and reroutes its time-slices (TimesliceSender's retention, LostCompute
// notice and reassignment; TimesliceReceiver's handling of reassigned contributions). The
// failure of compute node 0 takes the first DDE replica (DFS) or coordinator (load) with it:
// the one on compute node 1, fed the same reports all along, answers the inputs from then on
// (as an input of the pattern takes the first proposal or assignment of an interval from
// whichever replica it comes: the first replica's come first while it lives, the second's are
// left out until then, where the pattern's would be duplicates).
#pragma once

#include "run_recorder.hpp"
#include "simulated_network.hpp"

#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/deterministic_engine.hpp"
#include "netio/scheduler/input_node.hpp"
#include "netio/scheduler/reassignment.hpp"

#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace netio::scheduler::simulation {

// A node's clock: it reads true + offset + drift × true.
struct NodeClock {
  Duration offset{0};
  double drift = 0;

  Time local(Time t) const {
    return t + offset + Duration{static_cast<Duration::rep>(std::llround(drift * static_cast<double>(t.count())))};
  }
  // The first true time at which this clock reads `reading` or more.
  Time true_time(Time reading) const {
    Time t{static_cast<Duration::rep>(std::llround(static_cast<double>((reading - offset).count()) / (1.0 + drift)))};
    while (local(t) < reading) t += Duration{1};
    return t;
  }
};

class SimulatedNodes final : public NetworkReceiver {
 public:
  SimulatedNodes(const SimulatedSystem& system, ns::Mode mode, const SimulationOptions& options,
                 SimulatedNetwork& network, RunRecorder& recorder);

  // The connections' hellos, the DDE's start handshake, the end of the run and the fill samples.
  void start();
  // Every time-slice below the run's end handed over, and every input holds all its credits.
  bool done() const noexcept { return done_; }
  std::uint64_t handed_over() const;                       // time-slices, by all compute nodes
  std::uint64_t limit() const noexcept { return limit_; }  // the run's end (time-slices)
  // Hands the peaks and the DDE's fallback statistics to the recorder, and its records to `result`.
  void finish(SimulationResult& result);

  // NetworkReceiver
  void on_contribution(ns::InputIndex i, ns::ComputeIndex c, std::uint64_t subject, std::uint64_t bytes) override;
  void on_acknowledged(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t) override;
  void on_credit(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t) override;
  void on_due(ns::InputIndex i) override { drive(i); }

 private:
  // A contribution sent and not credited back yet, or waiting to be reassigned (with a failure
  // only: TimesliceSender's retention).
  struct Retained {
    ns::ComputeIndex own = 0;      // the node it was assigned to
    ns::ComputeIndex compute = 0;  // the node it was sent to (another when own was lost)
    std::uint8_t attempt = 0;      // its delivery number there
  };
  struct Input {
    Input(const ns::SchedulerConfig& config, ns::InputIndex i, ns::Mode mode,
          const std::vector<ns::ComputeIndex>& standby, bool standby_input)
        : node(config, i, mode, standby, standby_input),
          reassigned_out(config.compute_count, 0),
          recently_built(config.compute_count) {}
    ns::InputNode node;
    NodeClock clock;
    std::optional<emulated::DelayStream> late;  // how late its due timer fires (draws of options' timer_late)
    std::map<ns::IntervalIndex, std::optional<ns::IntervalPlan>> plans;  // started, not reported
    // With a failure only, as TimesliceSender::State keeps them.
    std::map<ns::TimesliceIndex, Retained> retained;
    std::map<ns::TimesliceIndex, Retained> to_reassign;          // of the lost node, not sent elsewhere yet
    std::vector<std::uint32_t> reassigned_out;                   // per compute node: at most its credits
    std::vector<std::deque<ns::TimesliceIndex>> recently_built;  // per compute node: credited last
    std::uint64_t reassigned = 0;                                // contributions sent to another node
    bool waiting_to_join = false;  // SimulatedSystem::input_join's input, its boundary not known yet
    bool told_join = false;        // has passed the joiner's boundary on
  };
  struct Held {
    Time first{0};
    Time last{0};
    std::uint64_t bytes = 0;
    bool present = false;
  };
  struct Compute {
    Compute(const ns::SchedulerConfig& config, ns::ComputeIndex c, std::uint32_t credits,
            const std::vector<ns::InputIndex>& standby_inputs)
        : node(config, c, credits, standby_inputs) {}
    ns::ComputeNode node;
    NodeClock clock;
    // What it holds, by time-slice: t at held[t - held_base] (only its own are present).
    // Handed over in order, so the front goes first: no search, no tree.
    std::deque<Held> held;
    std::uint64_t held_base = 0;
    std::map<ns::TimesliceIndex, Held> reassigned_held;  // a lost node's, reassigned here
    std::uint64_t held_bytes = 0;
    std::uint64_t peak_held_bytes = 0;
    std::uint64_t handed_over = 0;
    bool dead = false;                        // failed: nothing reaches it, nothing it sent arrives
    ns::TimesliceIndex highest_received = 0;  // membership: what bounds how far ahead the inputs are
    // The joiner's boundary sent on each input's data connection to this node, not arrived yet:
    // the lossless model carries the contributions apart from these messages, so one that
    // overtakes applies it first (the connection keeps its order).
    std::map<ns::InputIndex, ns::TimesliceIndex> input_join_in_flight;
  };

  // Input side, as TimesliceSender::State.
  void drive(ns::InputIndex i);
  void arm(ns::InputIndex i, Time due);
  void note_plan(Input& in, ns::TimesliceIndex t);
  void report(ns::InputIndex i, const ns::IntervalCompletion& done);
  void on_proposal(ns::InputIndex i, const ns::Proposal& proposal);
  void send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip);
  // Compute side, as TimesliceReceiver::State and DdeService::State.
  void deliver(ns::ComputeIndex c);
  void on_report(const ns::IntervalCompletion& done);
  void send_proposals(const std::vector<ns::AddressedProposal>& proposals);
  void on_replica_report(const ns::IntervalCompletion& done);
  void send_clock_sample(ns::InputIndex i, const ns::ClockProbe& sample);
  void compare_with_other_replica(ns::InputIndex input, const ns::Proposal& proposal);
  // Assignment by load: the inputs' reports to the assigner on compute node 0 (and the
  // replica on compute node 1), its decisions to every input.
  void send_load_report(ns::InputIndex i, const ns::LoadReport& report);
  void send_assignments(const std::vector<ns::IntervalAssignment>& assignments, bool by_replica = false);
  void compare_assignments(const std::vector<ns::IntervalAssignment>& assignments);
  // DDE failover: compute node 0 (the first replica) is dead, the second answers; it hands the
  // inputs what it decided and would have sent already (its latest proposals, its decisions).
  bool first_replica_dead() const { return computes_.front().dead; }
  bool failed_over() const { return first_replica_dead() && (replica_ || assigner_replica_); }
  void fail_over();
  void send_replica_proposals(const std::vector<ns::AddressedProposal>& proposals);
  // The failure: compute node c dies now; input i loses it, sends what waits to be reassigned.
  void fail(ns::ComputeIndex c);
  void lose(ns::InputIndex i, ns::ComputeIndex c);
  // SimulatedSystem::membership: the boundary named now, told to every input.
  void change_membership();
  // The first interval start no input can have sent into yet, named by compute node c.
  ns::TimesliceIndex boundary_ahead(ns::ComputeIndex c) const;
  // SimulatedSystem::input_join: the joiner asks the lowest member compute node, which names
  // its boundary and tells every input; each passes it on (input i took it from `namer`).
  void request_input_join();
  void name_input_boundary(ns::ComputeIndex namer);
  void relay_input_join_request(ns::InputIndex x, bool by_replica);
  void take_input_boundary(ns::InputIndex i, std::optional<ns::ComputeIndex> namer, ns::TimesliceIndex from);
  void tell_compute_input_joins(ns::ComputeIndex c, ns::InputIndex from_input);
  void send_reassigned(ns::InputIndex i);
  // Returns true when posted to the lossless model (then network_changed()).
  bool send_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t, std::uint8_t attempt);
  // An acknowledgement or a credit for t, from c to i on their data connection.
  void send_reply(ns::ComputeIndex c, ns::InputIndex i, Message::Kind kind, ns::TimesliceIndex t);
  void on_lost_compute(ns::ComputeIndex c, const std::vector<ns::TimesliceIndex>& built);
  void sample_fill();
  void end_of_duration();
  void check_done();

  const SimulatedSystem& system_;
  ns::Mode mode_;
  const SimulationOptions& options_;
  SimulatedNetwork& network_;
  RunRecorder& recorder_;
  ns::SchedulerConfig config_;
  std::uint32_t credits_;
  std::vector<Input> inputs_;
  std::vector<Compute> computes_;
  std::optional<ns::DeterministicEngine> dde_;  // on compute node 0 (DFS)
  // A second replica on compute node 1 (DFS, M ≥ 2): fed the same reports over its own
  // connections, so they reach it at other times; what it would propose is compared with
  // what the first one proposed, not sent.
  std::optional<ns::DeterministicEngine> replica_;
  // Assignment by load: the coordinator on compute node 0, and a replica on compute node 1
  // fed the same reports over its own connections, whose decisions are compared, not sent.
  std::optional<ns::Assigner> assigner_;
  std::optional<ns::Assigner> assigner_replica_;
  std::map<ns::InputIndex, ns::Proposal> replica_latest_;  // DFS: the replica's latest proposal per input
  // After the failure: proposals and assignments the inputs took (new to them), from any replica.
  std::uint64_t proposals_after_failure_ = 0;
  std::uint64_t assignments_after_failure_ = 0;
  std::uint64_t limit_ = UINT64_MAX;  // inputs send the time-slices below it
  bool limit_set_ = false;
  bool done_ = false;
  bool faults_ = false;  // a failure is modelled: the inputs retain what they sent
  std::optional<Time> failed_at_;
  std::optional<Time> membership_at_;
  std::optional<Time> input_join_at_;                  // the joiner asked
  std::optional<ns::TimesliceIndex> input_join_from_;  // its boundary, once the joiner took it (either assignment)
};

}  // namespace netio::scheduler::simulation
