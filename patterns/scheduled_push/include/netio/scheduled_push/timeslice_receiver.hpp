// SPDX-License-Identifier: MIT
/// @file
/// The compute node of the scheduled-push pattern: builds complete time-slices from the
/// contributions of every input node and hands each to user code, in time-slice order.
///
/// It listens for the input nodes' data connections (TimesliceSender), accepts each input
/// once its Hello matches this system (counts, interval length, compute index), and grants
/// it credits_per_input credits (16 unless set), with a receive buffer of
/// credits × input_count × max_contribution_bytes (scheduler::buffer_for_credits); or, when
/// receive_buffer_bytes is set instead, receive_buffer_bytes / input_count /
/// max_contribution_bytes of them (scheduler::credits_per_input). At most that many
/// contributions of one input are held here at once, so the contributions held never exceed
/// the receive buffer. Fewer than 2 credits per input are refused (one contribution in
/// flight while the next waits for its credit; with one, every send waits a round trip). When every
/// input contributed to time-slice t (t mod M == compute index), the handler gets t; after it
/// returns the buffers are freed and each input gets its credit back as a reply on its data
/// connection. In DFS mode each contribution is also acknowledged when it arrives.
///
/// A consumer that processes time-slices elsewhere (worker threads, a queue) constructs the
/// receiver with a KeepingHandler instead: it gets each complete time-slice as a Timeslice it
/// owns, and the buffer space and the inputs' credits stay taken until that Timeslice is
/// released or destroyed, on any thread and in any order. Kept time-slices are bounded by the
/// credits: when a consumer keeps the whole receive buffer, the inputs wait for it
/// (back-pressure) and nothing more is taken in.
///
/// A compute node lost (scheduler/reassignment.hpp): the inputs send its time-slices to the
/// others, with a delivery number (TimesliceView::attempt) above 0; this node builds them
/// besides its own, as soon as each is complete, and tells every input of a loss one of
/// them reported, so that all give the lost node up.
///
/// Faults: a time-slice that cannot complete is handed to on_incomplete (in order with the
/// complete ones) and freed, crediting the inputs that did contribute: when an input that has
/// not contributed is gone (its connection closed), or `incomplete_timeout` after its first
/// contribution. A misbehaving input (bad messages, breaking the credit protocol) is
/// logged once and its offending messages are dropped.
///
/// DFS: with run_dde the receiver also runs a DDE replica (DdeService) at dde_endpoint.
///
/// Threading: the handlers run on the context's event-loop thread, one at a time; the views
/// they get are valid during the call only (copy what you keep, or keep a Timeslice). They
/// must not block long. Construct and destroy on any thread, also inside this receiver's own
/// handlers; no handler runs after the destructor returned.
#pragma once

#include "netio/context.hpp"
#include "netio/endpoint.hpp"
#include "netio/scheduled_push/dde_service.hpp"
#include "netio/scheduler/config.hpp"
#include "netio/scheduler/time.hpp"
#include "netio/socket_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace netio::scheduled_push {

class Timeslice;

/// A time-slice handed to user code: one contribution per input (empty span for an input
/// that did not contribute, in an incomplete one). Views valid during the handler call only.
struct TimesliceView {
  scheduler::TimesliceIndex index = 0;
  bool complete = true;
  std::span<const std::span<const std::byte>> contributions;  ///< [input]
  std::span<const std::uint8_t> contributed;                  ///< [input]: 1 when it contributed
  /// When its first and its last contribution arrived (steady_clock since its epoch, this
  /// node's clock): last - first is the time-slice's completion spread.
  scheduler::Time first_arrival{0};
  scheduler::Time last_arrival{0};
  /// The delivery number: 0 when built on its own compute node, +1 for every compute node
  /// lost on its way here (scheduler/reassignment.hpp). A time-slice the lost node handed to
  /// its application just before it died, whose credit never left it, is built again here
  /// with a higher number: an application that must see each time-slice once drops the copy
  /// with the higher attempt (the index is the key), or deduplicates downstream.
  std::uint32_t attempt = 0;
};

struct TimesliceReceiverOptions {
  scheduler::SchedulerConfig config;  ///< equal on every node
  scheduler::ComputeIndex compute = 0;
  /// The receive buffer, sized by one of these (both set: refused): credits per input–compute
  /// pair, the buffer then credits × input_count × max_contribution_bytes; or the buffer's
  /// bytes, each input then getting receive_buffer_bytes / input_count / max_contribution_bytes
  /// credits. Neither: scheduler::default_credits_per_input (16). Fewer than
  /// scheduler::min_credits_per_input (2) credits per input are refused.
  std::optional<std::uint32_t> credits_per_input;
  std::optional<std::uint64_t> receive_buffer_bytes;
  std::uint64_t max_contribution_bytes = 64 * 1024;  ///< inputs declaring more are refused
  /// Give up on a time-slice this long after its first contribution; zero: never on time
  /// (only when an input that has not contributed is gone).
  std::chrono::nanoseconds incomplete_timeout = std::chrono::seconds(5);
  std::function<void(const TimesliceView&)> on_incomplete;  ///< optional
  /// KeepingHandler: when the kept Timeslices take every credit the inputs have for this node
  /// (credits_per_input() of them unreleased) for this long, the inputs can send it nothing
  /// and a warning saying so is logged, once until a release ends the stall
  /// (stats().kept_stalls counts these). Zero: no warning.
  std::chrono::nanoseconds kept_stall_warning = std::chrono::seconds(10);
  /// A standby slot (TimesliceSenderOptions::standby_computes on every input): welcomes the
  /// inputs but gets nothing until join().
  bool standby = false;
  /// Input slots on standby (TimesliceSenderOptions::standby on those inputs; equal on every
  /// compute node and DDE): time-slices are built without them until one joins at the
  /// boundary T a member compute node names (its TimesliceSender::join()), and with it from T
  /// on (scheduler/input_membership.hpp); under assignment by load the coordinator names T.
  /// An input whose hello disagrees is refused.
  std::vector<scheduler::InputIndex> standby_inputs;
  bool run_dde = false;
  std::optional<Endpoint> dde_endpoint;  ///< run_dde: where it listens (default: the data endpoint's host, port 0)
  /// Who may connect, to the data endpoint and to the DDE (netio/socket_options.hpp: allow-list,
  /// max_connections, timeouts; connections that have sent nothing are evicted first for a
  /// newcomer). Input nodes bring no pre-shared key: a `key` turns every one away.
  AdmissionOptions admission;
};

struct TimesliceReceiverStats {
  std::uint64_t complete = 0;
  std::uint64_t incomplete = 0;
  std::uint64_t contributions = 0;
  std::uint64_t held_bytes = 0;           ///< contribution bytes held now (kept Timeslices included)
  std::uint64_t kept = 0;                 ///< Timeslices kept (KeepingHandler) and not released yet
  std::uint64_t peak_held_bytes = 0;      ///< the most ever held at once
  std::uint64_t dropped = 0;              ///< contributions refused (misbehaving inputs)
  std::uint64_t kept_stalls = 0;          ///< stalls on kept Timeslices that lasted kept_stall_warning
  std::uint64_t reassigned_built = 0;     ///< time-slices of a lost compute node handed over here (attempt > 0)
  std::uint64_t built_elsewhere = 0;      ///< reassigned here, but an input knew the lost node built them: freed
  std::uint32_t computes_lost_heard = 0;  ///< lost compute nodes inputs told this node of (passed on to every input)
  std::uint32_t inputs_connected = 0;     ///< inputs welcomed and still connected
  std::uint32_t inputs_gone = 0;          ///< inputs welcomed whose connection closed since
  /// Draining (drain()): the boundary this node (or under load the coordinator) named (0: not
  /// draining, or not named yet), and whether it is
  /// drained (everything below it built and freed, every input's farewell in).
  std::uint64_t drain_from = 0;
  bool drained = false;
  std::uint32_t membership_notices = 0;  ///< other slots' membership changes inputs told this node of
  std::uint64_t join_from = 0;           ///< standby: the boundary it joined at (0: not joined)
  std::uint32_t inputs_joined = 0;       ///< standby inputs whose boundary this node knows
  std::uint32_t input_joins_named = 0;   ///< of those, the boundaries this node named
};

class TimesliceReceiver {
 public:
  /// Gets a view of each complete time-slice; it is freed when the handler returns.
  using Handler = std::function<void(const TimesliceView&)>;
  /// Gets each complete time-slice to keep; it is freed when the Timeslice is released.
  using KeepingHandler = std::function<void(Timeslice)>;
  /// Binds `local` (port 0 picks one) and, with run_dde, the DDE's endpoint. Throws
  /// netio::Error if it cannot bind, Errc::invalid_option naming the option if the options are
  /// bad.
  TimesliceReceiver(Context& context, const Endpoint& local, Handler handler, TimesliceReceiverOptions options);
  TimesliceReceiver(Context& context, const Endpoint& local, KeepingHandler handler, TimesliceReceiverOptions options);
  /// Kept Timeslices stay valid after this; releasing them then frees only their memory.
  ~TimesliceReceiver();
  TimesliceReceiver(const TimesliceReceiver&) = delete;
  TimesliceReceiver& operator=(const TimesliceReceiver&) = delete;

  Endpoint local_endpoint() const;
  std::optional<Endpoint> dde_endpoint() const;      ///< run_dde only
  std::optional<DdeServiceStats> dde_stats() const;  ///< run_dde only; any thread
  std::uint32_t credits_per_input() const noexcept;
  /// The receive buffer: the bound on held_bytes (given, or derived from the credits).
  std::uint64_t receive_buffer_bytes() const noexcept;
  TimesliceReceiverStats stats() const;  ///< any thread

  /// Drains this compute node (issue 51, item 3): it names the boundary T (returned: the first
  /// interval start beyond what any input can have sent yet) and tells every input; from T on
  /// its time-slices go to the other compute nodes (scheduler/membership.hpp: attempt 0),
  /// below T it builds its own as before (incomplete ones as usual). Once every input said it
  /// sent everything below T and every time-slice here is freed with its credits returned, it
  /// is drained (wait_drained()): destroy it then, and the inputs see its connection close as
  /// a departure, not a loss (nothing reassigned, TimesliceSenderStats::computes_drained).
  /// Destroyed earlier, it is lost as any node whose connection fails. Idempotent. Any thread
  /// but the loop's. Under assignment by load the coordinator (the DDE) names T instead, from
  /// the inputs' load reports, at an interval start about assignment_distance intervals on
  /// (docs/design/assignment.md): drain() asks every input and returns 0 until the first
  /// input's farewell tells this node T (stats().drain_from then). Throws netio::Error
  /// (Errc::invalid_option) for a standby slot that has not joined.
  scheduler::TimesliceIndex drain();
  /// A standby slot joins (options.standby): it asks the inputs, the lowest member names the
  /// boundary T as drain() does (under assignment by load the coordinator names it, with the
  /// slot's share from T on: a fair one), and from T on this slot's time-slices come here
  /// (stats().join_from once known). Returns at once; idempotent. Any thread but the loop's.
  /// Throws netio::Error (Errc::invalid_option) when not standby.
  void join();
  /// True once drained, false after `timeout`. Not on the loop thread.
  [[nodiscard]] bool wait_drained(std::chrono::nanoseconds timeout);

  struct State;

 private:
  TimesliceReceiver(Context& context, const Endpoint& local, TimesliceReceiverOptions options, Handler handler,
                    KeepingHandler keeping);

  std::shared_ptr<State> state_;
};

/// A complete time-slice a KeepingHandler kept: it owns the contributions, so view() stays
/// valid for as long as the Timeslice lives (also after the receiver is gone). While it
/// lives, its bytes count in the receiver's held_bytes and the inputs' credits for it are
/// taken. release() (or the destructor) frees it and gives the credits back; it may run on
/// any thread, and time-slices may be released in any order. Move-only; one Timeslice is not
/// to be used from two threads at once.
class Timeslice {
 public:
  Timeslice() noexcept;  ///< empty: nothing to release
  Timeslice(Timeslice&&) noexcept;
  Timeslice& operator=(Timeslice&&) noexcept;
  ~Timeslice();

  explicit operator bool() const noexcept { return owned_ != nullptr; }
  /// The time-slice; must not be called on an empty (released or moved-from) Timeslice.
  const TimesliceView& view() const noexcept;
  /// Frees the contributions and returns the credits; nothing when empty.
  void release() noexcept;

  struct Owned;

 private:
  friend struct TimesliceReceiver::State;
  explicit Timeslice(std::unique_ptr<Owned> owned) noexcept;

  std::unique_ptr<Owned> owned_;
};

}  // namespace netio::scheduled_push
