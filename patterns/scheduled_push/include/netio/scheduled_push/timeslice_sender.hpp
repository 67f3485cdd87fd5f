// SPDX-License-Identifier: MIT
/// @file
/// The input node of the scheduled-push pattern: sends this input's contribution to every
/// time-slice to the compute node that builds it (t mod M), under credits, in the offset
/// round-robin order, best-effort or paced by the DFS Input Engine.
///
/// Feed it with push(t, bytes) for t = 0, 1, 2, ... in order (each contribution is copied
/// into a bounded queue of `queue_capacity` contributions; push() waits for room, try_push()
/// does not). When every compute node is full (no credits back) the queue fills and push()
/// blocks, up to push_timeout, then fails with Errc::timeout: the policy is "block, then
/// fail"; try_push() is "fail at once" (stats(): pushes_blocked, push_blocked_ns, push_timeouts). It opens a
/// low-latency data connection to every compute endpoint (index = compute index), introduces itself (Hello), takes the
/// credits of each compute node's Welcome, and sends a contribution when (DFS) it is due and the compute node has a
/// credit. Credits and acknowledgements come back as replies on the data connections. In DFS mode it also opens a
/// low-latency connection to every DDE in dde_endpoints, sends each finished interval's meta-data report and proposal
/// request there, and takes the proposals that come back as replies (the first of an interval wins; it never waits for
/// a DDE; a DDE that goes away is dropped and logged once).
///
/// With config.assignment = load (scheduler/assigner.hpp) the DDEs also decide which compute
/// node builds which time-slice: the sender connects to them in either mode, hands each one
/// its load report of every interval it has sent (queued until that DDE's connection takes
/// it), and sends into an interval only once it holds that interval's assignment, the first
/// a DDE sent (replicas send the same). The first two intervals are t mod M.
///
/// Faults: a compute node whose connection fails, that refuses this input, that does not
/// welcome it within `welcome_timeout`, or that makes no progress (no credit back for
/// `progress_timeout` while it holds this input's oldest contribution), is lost, and so is one
/// another input lost (a compute node passes the news on to every input). Its time-slices
/// go to the other compute nodes (scheduler/reassignment.hpp: every input picks the same
/// node, without asking anyone), with a delivery number above 0 (TimesliceView::attempt):
/// those it sent there and never got the credit of (retained, below), and those it had
/// not sent yet. Each compute node first hears which of the lost node's time-slices this
/// input knows built there (its last credits), so that a time-slice built there is not
/// built again from the other inputs' copies alone. Only when every compute node is lost
/// are contributions reported to on_undeliverable (loop thread).
///
/// Draining (TimesliceReceiver::drain()): a compute node announces a boundary T; from T on its
/// time-slices go to the other members (scheduler/membership.hpp, attempt 0, under their
/// credits), every other node hears of it before any of them, and once this input sent it
/// everything below T it says farewell. When its connection then closes with nothing of this
/// input's outstanding it has departed (stats().computes_drained), not been lost.
///
/// Joining: a standby slot (standby_computes) gets nothing until its node asks to join; the
/// lowest member names the boundary T (as a draining node names its own), every input routes
/// the slot's time-slices from T on to it, every node hearing of it first.
///
/// Under config.assignment = load a compute node only asks (to drain, to join); this input
/// flags the request in its load reports, and the coordinator names the change in the
/// assignment of the interval it starts (scheduler/assigner.hpp); this input applies it
/// before it sends into that interval and tells the nodes as above; a draining node learns
/// its boundary from the farewell.
///
/// Inputs joining (standby): an input on standby connects to every compute node but sends
/// nothing until join(): the lowest member compute node names the boundary T (the first
/// interval start no input can have sent into yet) and tells every input; each tells every
/// compute node before any of its contributions at or above T, so every time-slice below T
/// is built without the joiner and every one from T on with it. The joiner pushes from T on
/// (wait_joined()). Under config.assignment = load the coordinator names T instead: join()
/// asks every DDE, which passes the request on to every input; they flag it in their load
/// reports until the decision for an interval names the join, which every input applies
/// before it sends into that interval (and passes on as above) and the joiner starts with.
/// Both modes, both assignments (docs/design/assignment.md).
///
/// Retention: a contribution sent stays with the sender until its compute node returns the
/// credit, i.e. built the time-slice and freed it (bounded by the credits: at most credits ×
/// compute_count contributions, and as many reassigned ones). A reassigned contribution goes
/// to its new node outside that node's credits, at most its credits' worth at once.
///
/// Guarantee (one compute node lost at a time, every input alive): every time-slice reaches
/// the application of exactly one live compute node complete, or a second one with a higher
/// attempt (the lost node handed it over, and died, before its credit left), or, after
/// `incomplete_timeout` on that node, its on_incomplete.
///
/// Threading: push()/try_push()/finish()/wait_finished()/stats() from any thread, except that
/// push() and wait_finished() must not be called on the event-loop thread (use try_push()
/// there). The engine runs on the context's event-loop thread. Construct and destroy on any
/// thread but inside this sender's callbacks; the destructor closes the connections without
/// waiting for what is unsent.
#pragma once

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/input_node.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace netio::scheduled_push {

/// DFS: one interval of this input, reported when its last acknowledgement arrived: what
/// it measured (the report it sends to the DDEs: start, duration, median acknowledgement
/// latency; this node's steady clock) and the plan it was paced by (the proposed start and
/// duration; none when it ran best-effort, before the first proposal).
struct IntervalOutcome {
  scheduler::MetadataReport report;
  std::optional<scheduler::IntervalPlan> plan;
};

struct TimesliceSenderOptions {
  scheduler::SchedulerConfig config;  ///< equal on every node
  scheduler::Mode mode = scheduler::Mode::best_effort;
  scheduler::InputIndex input = 0;
  std::vector<Endpoint> compute_endpoints;  ///< [compute index]: the TimesliceReceivers
  std::vector<Endpoint> dde_endpoints;      ///< DFS or assignment by load: every DDE replica
  /// Slots of compute_endpoints that are not members at the start (scheduler/membership.hpp):
  /// nothing goes there, their absence is no loss (no welcome timeout; connecting goes on
  /// until they listen), until one joins (TimesliceReceiverOptions::standby, join()). Equal on
  /// every input.
  std::vector<scheduler::ComputeIndex> standby_computes;
  /// This input is on standby (in every TimesliceReceiverOptions::standby_inputs): it sends
  /// nothing until join() and its boundary, then pushes from the boundary on.
  bool standby = false;
  std::uint64_t max_contribution_bytes = 64 * 1024;  ///< larger pushes throw; must not exceed the receivers'
  std::size_t queue_capacity = 0;                    ///< contributions queued at most; 0: 2 × compute_count
  std::chrono::nanoseconds welcome_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds push_timeout = std::chrono::seconds(10);  ///< push() waits at most this long
  /// A compute node that holds this input's oldest contribution not credited back, and
  /// returns no credit for this long, is lost (see Faults): its consumer stopped, or it hangs
  /// with its connection open. (Only the oldest's holder: when one node stops, the others
  /// stop returning credits too, as their time-slices wait for inputs that wait for it.)
  /// Longer than the longest a healthy consumer keeps a time-slice; zero: never.
  std::chrono::nanoseconds progress_timeout = std::chrono::seconds(5);
  /// Optional, loop thread: a contribution that no compute node can build any more (every
  /// one is lost: see Faults), whether it had been sent once or not.
  std::function<void(scheduler::TimesliceIndex, scheduler::ComputeIndex)> on_undeliverable;
  std::function<void(const IntervalOutcome&)> on_interval;  ///< optional, DFS, loop thread: every finished interval
};

struct TimesliceSenderStats {
  std::uint64_t pushed = 0;
  std::uint64_t sent = 0;
  std::uint64_t undeliverable = 0;  ///< never sent: every compute node was lost
  /// Sent, but no compute node is left to build them: also reported to on_undeliverable.
  std::uint64_t unbuilt = 0;
  /// Contributions sent to another compute node because theirs was lost (each time it is).
  std::uint64_t reassigned = 0;
  std::uint64_t retained = 0;       ///< contributions sent and kept until their credit comes back, now
  std::uint64_t peak_retained = 0;  ///< the most at once
  std::uint64_t credits_returned = 0;
  std::uint64_t incomplete_credits = 0;  ///< credits of time-slices a compute node gave up on
  std::uint64_t reports_sent = 0;        ///< DFS: interval reports handed to DDE connections
  std::uint64_t reports_missed = 0;      ///< DFS: reports a DDE missed (not connected yet, lost, or full)
  std::uint64_t proposals_taken = 0;     ///< DFS
  std::uint32_t computes_lost = 0;
  std::vector<scheduler::ComputeIndex> lost_computes;  ///< which ones, in the order lost
  /// DDE replicas dropped (connection failed or refused, or a bad message), and which ones
  /// (indices into dde_endpoints), in the order dropped: the others go on proposing and
  /// assigning (Faults).
  std::uint32_t ddes_lost = 0;
  std::vector<std::size_t> lost_ddes;
  /// Assignment by load: intervals whose assignment this input took (the first replica's of each).
  std::uint64_t assignments_taken = 0;
  /// Assignment by load: how often this input had a contribution to send but no assignment
  /// for its interval yet, and how long it waited for them in all (the coordinator's round
  /// trip: every input's report of interval k − 2 to a DDE, its decision back).
  std::uint64_t assignment_waits = 0;
  std::uint64_t assignment_wait_ns = 0;
  /// Membership (scheduler/membership.hpp): compute nodes that announced a drain, and those
  /// that then left cleanly (drained, their connection closed with nothing outstanding: not
  /// lost, nothing reassigned).
  std::uint32_t computes_draining = 0;
  std::uint32_t computes_drained = 0;
  std::uint32_t computes_joined = 0;  ///< standby slots that joined (their boundary taken)
  /// Standby inputs: this input's boundary once named (0: not joined), and the other inputs'
  /// joins this input passed on to the compute nodes.
  std::uint64_t join_from = 0;
  std::uint32_t inputs_joined = 0;
  /// Back-pressure: push() calls that found the queue full and waited (every compute node
  /// out of credits or send buffers), the time they waited in all, and those that gave up
  /// after push_timeout (Errc::timeout). try_push() returning false is not counted.
  std::uint64_t pushes_blocked = 0;
  std::uint64_t push_blocked_ns = 0;
  std::uint64_t push_timeouts = 0;
  /// DFS: contributions sent under a plan (paced, not best-effort), and by how much they went
  /// after their due time in all (waiting for a credit or for the event loop counts too).
  std::uint64_t paced_sent = 0;
  std::chrono::nanoseconds paced_lateness{0};
};

class TimesliceSender {
 public:
  /// Starts connecting at once. Throws netio::Error(Errc::invalid_option) for bad options:
  /// a config that does not validate, an input out of range, compute_endpoints not
  /// compute_count long, DFS without a DDE.
  TimesliceSender(Context& context, TimesliceSenderOptions options);
  ~TimesliceSender();
  TimesliceSender(const TimesliceSender&) = delete;
  TimesliceSender& operator=(const TimesliceSender&) = delete;

  /// Queues this input's contribution to time-slice t (copied). t must be the next one
  /// (0, 1, 2, ...; a standby input: T, T + 1, ... once joined): throws
  /// netio::Error(Errc::invalid_option) otherwise;
  /// Errc::message_too_large for more than max_contribution_bytes; Errc::closed after
  /// finish(). push() waits up to push_timeout for room (Errc::timeout; Errc::would_block on
  /// the event-loop thread); try_push() returns false instead.
  void push(scheduler::TimesliceIndex t, std::span<const std::byte> bytes);
  bool try_push(scheduler::TimesliceIndex t, std::span<const std::byte> bytes);

  /// No more pushes. wait_finished() then waits until every pushed contribution was sent
  /// (or skipped) and every credit came back (or its compute node was lost): true, or false
  /// after `timeout`. A stream may end within a round (not a multiple of compute_count): each
  /// input sends a round from its own place on, so the last round's time-slices that nobody
  /// pushed come before pushed ones for some inputs, and those send the rest of the round only
  /// after finish(). Every input calls it, then each may wait: one input waiting for its
  /// credits before another called finish() can wait for that other.
  void finish();
  [[nodiscard]] bool wait_finished(std::chrono::nanoseconds timeout);

  TimesliceSenderStats stats() const;

  /// A standby input (options.standby) asks to join: the lowest member compute node (under
  /// assignment by load the coordinator) names its boundary T. Returns at once; idempotent.
  /// Throws netio::Error (Errc::invalid_option) when not on standby. Any thread but the loop's.
  void join();
  /// The boundary T once named (push(T, ...) comes next), or nothing after `timeout`. Not on
  /// the loop thread.
  [[nodiscard]] std::optional<scheduler::TimesliceIndex> wait_joined(std::chrono::nanoseconds timeout);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace netio::scheduled_push
