// SPDX-License-Identifier: MIT
#include "netio/scheduled_push/timeslice_receiver.hpp"

#include "scheduled_push_metrics.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/scheduled_push/wire.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/credits.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace netio::scheduled_push {

namespace ns = netio::scheduler;

namespace {

ns::Time now() { return std::chrono::steady_clock::now().time_since_epoch(); }

// How often the receiver looks for time-slices timed out and replies left waiting.
std::chrono::nanoseconds housekeeping_period(std::chrono::nanoseconds timeout) {
  using namespace std::chrono_literals;
  if (timeout <= 0ns) return 20ms;
  return std::clamp<std::chrono::nanoseconds>(timeout / 4, 1ms, 20ms);
}

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "scheduled push receiver"};

// The receive buffer and the credits per input it gives, from the options: by
// credits_per_input (default 16) or by receive_buffer_bytes. Throws for both, and for fewer
// than ns::min_credits_per_input credits.
struct BufferSizing {
  std::uint64_t buffer_bytes = 0;
  std::uint32_t credits = 0;
};

BufferSizing size_buffer(const TimesliceReceiverOptions& options) {
  const auto inputs = options.config.input_count;
  const auto contribution = options.max_contribution_bytes;
  if (options.credits_per_input && options.receive_buffer_bytes) {
    reject(
        fmt::format("receive_buffer_bytes ({}) and credits_per_input ({}) both size the receive buffer: set one "
                    "of them",
                    *options.receive_buffer_bytes, *options.credits_per_input));
  }
  if (inputs == 0) reject("config.input_count is 0");
  if (contribution == 0) reject("max_contribution_bytes is 0");
  if (!options.receive_buffer_bytes) {
    const auto credits = options.credits_per_input.value_or(ns::default_credits_per_input);
    if (credits < ns::min_credits_per_input) {
      reject(ns::too_few_credits_message(credits, fmt::format("credits_per_input = {}", credits),
                                         fmt::format("credits_per_input = {} or more", ns::min_credits_per_input)));
    }
    return {ns::buffer_for_credits(credits, inputs, contribution), credits};
  }
  const auto buffer = *options.receive_buffer_bytes;
  const auto least = ns::buffer_for_credits(ns::min_credits_per_input, inputs, contribution);
  if (buffer < least) {
    reject(ns::too_few_credits_message(
        buffer / inputs / contribution,
        fmt::format("receive_buffer_bytes = {} ({} inputs, max_contribution_bytes {})", buffer, inputs, contribution),
        fmt::format("receive_buffer_bytes = {} or more ({} × {} × {}), or credits_per_input = {} instead", least,
                    ns::min_credits_per_input, inputs, contribution, ns::min_credits_per_input)));
  }
  return {buffer, ns::credits_per_input(buffer, inputs, contribution)};
}

}  // namespace

struct Timeslice::Owned {
  std::vector<std::vector<std::byte>> slots;  // [input]
  std::vector<std::span<const std::byte>> views;
  std::vector<std::uint8_t> contributed;
  TimesliceView view;
  std::uint64_t bytes = 0;
  std::weak_ptr<TimesliceReceiver::State> receiver;
};

struct TimesliceReceiver::State : std::enable_shared_from_this<State> {
  struct Held {
    std::vector<std::vector<std::byte>> slots;  // [input]
    ns::Time first_arrival{0};
    ns::Time last_arrival{0};
  };
  struct Input {
    Peer peer;  // its data connection (default: not connected yet)
    bool gone = false;
    std::deque<std::vector<std::byte>> pending_replies;  // its reply window was full
  };

  State(Context& ctx, TimesliceReceiverOptions opts, Handler on_complete, KeepingHandler to_keep)
      : context(ctx),
        options(std::move(opts)),
        handler(std::move(on_complete)),
        keeping(std::move(to_keep)),
        sizing(size_buffer(options)),
        credits(sizing.credits),
        node(options.config, options.compute, credits, options.standby_inputs),
        inputs(options.config.input_count) {}

  void on_message(std::span<const std::byte> bytes, const Peer& peer) {
    try {
      switch (wire_type(bytes)) {
        case WireType::hello: on_hello(decode_hello(bytes), peer); break;
        case WireType::contribution: on_contribution(bytes, peer); break;
        case WireType::lost_compute: on_lost_compute(decode_lost_compute(bytes), peer); break;
        case WireType::membership: on_membership(decode_membership(bytes), peer); break;
        case WireType::input_join: on_input_join(decode_input_join(bytes), peer); break;
        default: throw Error(Errc::protocol_error, "a reply-type message sent to a compute node");
      }
    } catch (const Error& e) {
      drop(peer, e.what());
    }
    deliver();
  }

  void drop(const Peer& peer, const std::string& why) {
    {
      std::lock_guard lock(stats_mutex);
      ++stats.dropped;
    }
    if (complained.insert(peer.connection()).second) {
      log(LogLevel::warn, "scheduled push: compute node {} at {} dropped a message from {}: {}", options.compute,
          local_endpoint().to_string(), peer.to_string(), why);
    }
  }

  // Written by the constructing thread once bound, read by the loop thread (logs).
  Endpoint local_endpoint() const {
    std::lock_guard lock(stats_mutex);
    return endpoint;
  }

  void on_hello(const Hello& hello, const Peer& peer) {
    const auto& config = options.config;
    std::string mismatch;
    if (hello.input_count != config.input_count || hello.compute_count != config.compute_count ||
        hello.timeslices_per_interval != config.timeslices_in_interval()) {
      mismatch =
          fmt::format("its system is {} inputs × {} computes, {} time-slices per interval; this one is {} × {}, {}",
                      hello.input_count, hello.compute_count, hello.timeslices_per_interval, config.input_count,
                      config.compute_count, config.timeslices_in_interval());
    } else if (hello.compute != options.compute) {
      mismatch = fmt::format("it addressed compute node {}, this is {}", hello.compute, options.compute);
    } else if (hello.input >= config.input_count) {
      mismatch = fmt::format("input {} out of range", hello.input);
    } else if (hello.max_contribution_bytes > options.max_contribution_bytes) {
      mismatch = fmt::format("contributions up to {} bytes, this node takes {}", hello.max_contribution_bytes,
                             options.max_contribution_bytes);
    } else if (inputs[hello.input].peer || by_connection.count(peer.connection()) != 0) {
      mismatch = fmt::format("input {} is connected already", hello.input);
    } else {
      mismatch = standby_mismatch(hello);
    }
    if (!mismatch.empty()) {
      log(LogLevel::warn, "scheduled push: compute node {} at {} refused {}: {}", options.compute,
          local_endpoint().to_string(), peer.to_string(), mismatch);
      try {
        (void)peer.try_reply(encode_refusal(mismatch));
      } catch (const Error&) {
      }
      complained.insert(peer.connection());
      return;
    }
    by_connection[peer.connection()] = hello.input;
    inputs[hello.input].peer = peer;
    {
      std::lock_guard lock(stats_mutex);
      ++stats.inputs_connected;
    }
    acknowledge[hello.input] = hello.mode == Mode::dfs;
    reply(hello.input, encode(Welcome{options.compute, credits}));
    if (drain_from || drain_by_load) {  // under load, the request: the input's farewell names the boundary
      reply(hello.input, encode(ns::MembershipChange{options.compute, false, drain_by_load ? 0 : *drain_from}));
    }
    if (join_requested && !join_from) reply(hello.input, encode(ns::MembershipChange{options.compute, true, 0}));
    for (const auto& [x, from] : input_boundaries_named) reply(hello.input, encode(InputJoin{x, from}));
  }

  // An input on standby says so in its hello, and this node must list it (and only it) in
  // standby_inputs: both sides of an input's membership agree from the start.
  std::string standby_mismatch(const Hello& hello) const {
    const bool listed = node.input_membership().standby(hello.input);
    if (hello.standby == listed) return {};
    return hello.standby
               ? fmt::format("input {} is on standby, but this node's standby_inputs does not list it", hello.input)
               : fmt::format("input {} is a member from the start, but this node's standby_inputs lists it",
                             hello.input);
  }

  // A standby input's join (wire.hpp InputJoin): {x, 0} from input x asks this node to name
  // its boundary: the first interval start no input can have sent into yet (boundary_ahead(),
  // as for a compute node's join), told to every input ordered before any credit this node
  // returns from now on, so that each passes it on ahead of its contributions from there.
  // {x, T} from any input: x's boundary, heard before any contribution at or above T.
  void on_input_join(const InputJoin& join, const Peer& peer) {
    const auto known = by_connection.find(peer.connection());
    if (known == by_connection.end()) throw Error(Errc::protocol_error, "an input join before a hello");
    if (join.input >= options.config.input_count || !node.input_membership().standby(join.input)) {
      throw Error(Errc::protocol_error, fmt::format("a join of input {}, not a standby input", join.input));
    }
    if (join.from == 0) {
      // Under load the coordinator names it (this node's credits bound nothing when its share
      // is small): the joiner asks the DDE replicas, not a compute node.
      if (options.config.assignment == ns::Assignment::load) {
        throw Error(Errc::protocol_error,
                    fmt::format("input {} asked this node to name when it joins: under assignment by load the "
                                "coordinator names it",
                                join.input));
      }
      if (known->second != join.input) {
        throw Error(Errc::protocol_error,
                    fmt::format("input {} asked for input {} to join", known->second, join.input));
      }
      // Asked again, or named already (here or by another node): the same boundary.
      if (const auto heard = node.input_membership().joins_from(join.input)) {
        reply(join.input, encode(InputJoin{join.input, *heard}));
        return;
      }
      const auto from = boundary_ahead();
      input_boundaries_named.emplace(join.input, from);
      take_input_boundary(join.input, from);
      log(LogLevel::info, "scheduled push: compute node {} at {} names time-slice {} for input {} ({}) to join",
          options.compute, local_endpoint().to_string(), from, join.input, peer.to_string());
      for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, encode(InputJoin{join.input, from}));
      std::lock_guard lock(stats_mutex);
      ++stats.input_joins_named;
      return;
    }
    if (join.from % options.config.timeslices_in_interval() != 0) {
      throw Error(Errc::protocol_error,
                  fmt::format("input {} joins from {}, not an interval start", join.input, join.from));
    }
    take_input_boundary(join.input, join.from);
  }

  // Why input i's contribution to t is not this node's to take.
  std::string not_mine(InputIndex i, ns::TimesliceIndex t) const {
    if (!node.input_membership().member(i, t)) {
      const auto from = node.input_membership().joins_from(i);
      return from ? fmt::format("input {} contributes to time-slice {}, but joins only from {}", i, t, *from)
                  : fmt::format("input {} is on standby and has no boundary yet, but contributes to time-slice {}", i,
                                t);
    }
    return fmt::format("time-slice {} belongs to compute node {}", t, t % options.config.compute_count);
  }

  void take_input_boundary(InputIndex x, ns::TimesliceIndex from) {
    bool added = false;
    try {
      added = node.on_input_joins(x, from);
    } catch (const Error& e) {
      throw Error(Errc::protocol_error, e.what());
    }
    if (!added) return;
    log(LogLevel::info, "scheduled push: compute node {}: input {} contributes from time-slice {} on", options.compute,
        x, from);
    std::lock_guard lock(stats_mutex);
    ++stats.inputs_joined;
  }

  // The first interval start no input can have sent into yet: an input can be at most its
  // credits' worth of this node's places ahead of what this node received from it (it needs
  // a credit back for each place of this node it passes, and every round has one), so every
  // input is below H + (credits + 2)·M, H the highest time-slice received here. An interval
  // start is a round start, and DFS's and the assignment's unit. Told to the inputs ordered
  // before any credit returned after it, so it still holds when they read it.
  ns::TimesliceIndex boundary_ahead() const {
    const auto m = std::uint64_t{options.config.compute_count};
    const auto n = options.config.timeslices_in_interval();
    const auto bound = highest_received + (std::uint64_t{credits} + 2) * m;
    return (bound + n - 1) / n * n;
  }

  // join(): a standby slot asks every input to have a member name its boundary.
  void start_join() {
    if (!options.standby) {
      throw Error(
          Errc::invalid_option,
          fmt::format("compute node {}: join() without options.standby (it is a member already)", options.compute));
    }
    if (join_requested) return;
    join_requested = true;
    log(LogLevel::info, "scheduled push: compute node {} at {} asks to join", options.compute,
        local_endpoint().to_string());
    for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, encode(ns::MembershipChange{options.compute, true, 0}));
  }

  // Drain (TimesliceReceiver::drain()): names the boundary T from which this node builds
  // nothing, and tells every input, ordered before any credit it returns from now on. An
  // input can be at most its credits' worth of this node's places ahead of what this node
  // received from it (it needs a credit back for each place of this node it passes, and every
  // round has one), so every input is below H + (credits + 2)·M, H the highest time-slice
  // received here; T is the first interval start from there (a round start, and DFS's and the
  // assignment's unit). Idempotent: a second call returns the same T.
  ns::TimesliceIndex start_drain() {
    if (drain_from) return *drain_from;
    if (options.standby && !join_from) {
      throw Error(Errc::invalid_option,
                  fmt::format("compute node {}: drain() of a standby slot that has not joined", options.compute));
    }
    if (options.config.assignment == ns::Assignment::load) return request_drain_by_load();
    const ns::TimesliceIndex from = std::max(boundary_ahead(), join_from.value_or(0) + options.config.compute_count);
    drain_from = from;
    log(LogLevel::info, "scheduled push: compute node {} at {} drains: it builds nothing from time-slice {} on",
        options.compute, local_endpoint().to_string(), from);
    for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, encode(ns::MembershipChange{options.compute, false, from}));
    {
      std::lock_guard lock(stats_mutex);
      stats.drain_from = from;
    }
    farewells.assign(inputs.size(), false);
    check_drained();
    return from;
  }

  // Assignment by load: the coordinator names the boundary (this node's credits do not bound
  // how far ahead the inputs are when its share is small: docs/design/assignment.md). This node
  // asks every input, which flag it in their load reports; each input's farewell carries the
  // boundary the decision named. 0 until the first farewell names it.
  ns::TimesliceIndex request_drain_by_load() {
    if (!drain_by_load) {
      drain_by_load = true;
      log(LogLevel::info, "scheduled push: compute node {} at {} asks to drain; the coordinator names when",
          options.compute, local_endpoint().to_string());
      for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, encode(ns::MembershipChange{options.compute, false, 0}));
      farewells.assign(inputs.size(), false);
    }
    return drain_from.value_or(0);
  }

  // An input's membership message: its farewell when it is this node's drain (it sent this
  // node everything below the boundary); otherwise another slot's change, whose time-slices
  // may come here now.
  void on_membership(const ns::MembershipChange& change, const Peer& peer) {
    const auto known = by_connection.find(peer.connection());
    if (known == by_connection.end()) throw Error(Errc::protocol_error, "a membership message before a hello");
    if (change.compute >= options.config.compute_count) {
      throw Error(Errc::protocol_error, fmt::format("membership of slot {}, out of range", change.compute));
    }
    if (change.compute == options.compute && change.joins) {  // this standby slot's boundary, named by a member
      if (!options.standby || change.from == 0 || (join_from && *join_from != change.from)) {
        throw Error(Errc::protocol_error, fmt::format("a join of this node from {} it cannot take", change.from));
      }
      if (join_from) return;
      join_from = change.from;
      node.accept_rerouted();
      log(LogLevel::info, "scheduled push: compute node {} at {} joins: its time-slices from {} on", options.compute,
          local_endpoint().to_string(), change.from);
      std::lock_guard lock(stats_mutex);
      stats.join_from = change.from;
      return;
    }
    if (change.joins && change.from == 0) {                    // a standby slot asks to join: this member names when
      if (!joins_named.insert(change.compute).second) return;  // every input passes the request on
      const auto from = boundary_ahead();
      log(LogLevel::info, "scheduled push: compute node {} names time-slice {} for compute node {} to join",
          options.compute, from, change.compute);
      for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, encode(ns::MembershipChange{change.compute, true, from}));
      return;
    }
    if (change.compute == options.compute) {
      if (drain_by_load && !drain_from && change.from != 0) {  // the first farewell: the boundary named
        drain_from = change.from;
        log(LogLevel::info, "scheduled push: compute node {} at {} drains: it builds nothing from time-slice {} on",
            options.compute, local_endpoint().to_string(), change.from);
        std::lock_guard lock(stats_mutex);
        stats.drain_from = change.from;
      }
      if (!drain_from || change.from != *drain_from) {
        throw Error(Errc::protocol_error,
                    fmt::format("a farewell for a drain from {} this node did not announce", change.from));
      }
      farewells[known->second] = true;
      check_drained();
      return;
    }
    node.accept_rerouted();
    std::lock_guard lock(stats_mutex);
    ++stats.membership_notices;
  }

  // Draining: done once every input said farewell (or is gone), every time-slice here is
  // built (or given up) and freed, and every credit has left.
  void check_drained() {
    if (!drain_from || drained || !socket) return;
    for (InputIndex i = 0; i < inputs.size(); ++i) {
      if (!(farewells[i] || inputs[i].gone) || !inputs[i].pending_replies.empty()) return;
    }
    if (node.open_timeslices() != 0 || node.reassigned_open() != 0 || node.handed_over_timeslices() != 0) return;
    drained = true;
    log(LogLevel::info, "scheduled push: compute node {} at {} drained: everything below time-slice {} built",
        options.compute, local_endpoint().to_string(), *drain_from);
    {
      std::lock_guard lock(stats_mutex);
      stats.drained = true;
    }
    drained_changed.notify_all();
  }

  void on_contribution(std::span<const std::byte> bytes, const Peer& peer) {
    const auto header = decode_contribution(bytes);
    const auto known = by_connection.find(peer.connection());
    if (known == by_connection.end()) throw Error(Errc::protocol_error, "a contribution before (or without) a hello");
    const InputIndex i = known->second;
    if (header.input != i)
      throw Error(Errc::protocol_error,
                  fmt::format("contribution of input {} on input {}'s connection", header.input, i));
    if (header.length > options.max_contribution_bytes) {
      throw Error(Errc::protocol_error,
                  fmt::format("a {}-byte contribution (at most {})", header.length, options.max_contribution_bytes));
    }
    const auto t = header.timeslice;
    highest_received = std::max(highest_received, t);
    const auto arrived = now();
    const bool reassigned = header.attempt > 0;  // not acknowledged: the input's DFS engine counted it as skipped
    const auto arrival =
        reassigned ? node.on_reassigned(i, t, header.attempt, arrived) : node.on_contribution(i, t, arrived);
    switch (arrival) {
      case ns::ComputeNode::Arrival::accepted:
      case ns::ComputeNode::Arrival::completes: {
        auto& open = held[t];
        if (open.slots.empty()) {
          open.slots.resize(options.config.input_count);
          open.first_arrival = arrived;
        }
        open.slots[i].assign(bytes.begin() + contribution_header_size, bytes.end());
        open.last_arrival = arrived;
        std::lock_guard lock(stats_mutex);
        ++stats.contributions;
        stats.held_bytes += header.length;
        stats.peak_held_bytes = std::max(stats.peak_held_bytes, stats.held_bytes);
        break;
      }
      case ns::ComputeNode::Arrival::late:  // given up already: its credit goes back at once
        if (acknowledge[i] && !reassigned) reply(i, encode_acknowledgement(t));
        reply(i, encode(Credit{t, false}));
        return;
      case ns::ComputeNode::Arrival::not_mine: throw Error(Errc::protocol_error, not_mine(i, t));
      case ns::ComputeNode::Arrival::duplicate:
        throw Error(Errc::protocol_error, fmt::format("a second contribution to time-slice {}", t));
      case ns::ComputeNode::Arrival::over_credit:
        throw Error(Errc::protocol_error, fmt::format("time-slice {} sent without a credit ({} held)", t, credits));
    }
    if (acknowledge[i] && !reassigned) reply(i, encode_acknowledgement(t));
  }

  // An input lost compute node lost.compute: the time-slices it names were built there (not
  // to be built here), and every input hears of the loss, so that all reroute its time-slices.
  void on_lost_compute(const LostCompute& lost, const Peer& peer) {
    const auto known = by_connection.find(peer.connection());
    if (known == by_connection.end()) throw Error(Errc::protocol_error, "a lost-compute message before a hello");
    if (lost.compute >= options.config.compute_count) {
      throw Error(Errc::protocol_error, fmt::format("lost compute node {} out of range", lost.compute));
    }
    for (const auto t : lost.built) {
      const auto owed = node.on_built_elsewhere(t);
      if (owed.empty()) continue;
      std::uint64_t bytes = 0;
      if (const auto it = held.find(t); it != held.end()) {
        for (const auto& slot : it->second.slots) bytes += slot.size();
        held.erase(it);
      }
      {
        std::lock_guard lock(stats_mutex);
        stats.held_bytes -= bytes;
        ++stats.built_elsewhere;
      }
      for (const InputIndex i : owed) reply(i, encode(Credit{t, true}));
    }
    if (!lost_heard.insert(lost.compute).second) return;
    log(LogLevel::info, "scheduled push: compute node {}: input {} lost compute node {}; telling every input",
        options.compute, known->second, lost.compute);
    {
      std::lock_guard lock(stats_mutex);
      ++stats.computes_lost_heard;
    }
    const auto notice = encode(LostCompute{lost.compute, {}});
    for (InputIndex i = 0; i < inputs.size(); ++i) reply(i, notice);
  }

  void on_disconnected(const Peer& peer) {
    const auto known = by_connection.find(peer.connection());
    if (known == by_connection.end()) return;
    const InputIndex i = known->second;
    if (!inputs[i].gone) {
      std::lock_guard lock(stats_mutex);
      --stats.inputs_connected;
      ++stats.inputs_gone;
    }
    inputs[i].gone = true;
    inputs[i].pending_replies.clear();
    node.on_input_gone(i);
    log(LogLevel::debug, "scheduled push: compute node {}: input {} ({}) is gone", options.compute, i,
        peer.to_string());
    deliver();
    check_drained();
  }

  // Hands over every ready time-slice, in order, and returns the credits. A handler may
  // destroy the receiver (the socket is gone then): nothing more is handed over.
  void deliver() {
    while (socket) {
      auto ready = node.next_ready(now(), options.incomplete_timeout);
      if (!ready) break;
      const auto t = ready->timeslice;
      const auto open = held.find(t);
      std::vector<std::span<const std::byte>> views(options.config.input_count);
      std::vector<std::uint8_t> contributed(options.config.input_count, 0);
      std::uint64_t bytes = 0;
      for (InputIndex i = 0; i < options.config.input_count; ++i) {
        if (!ready->contributed[i]) continue;
        contributed[i] = 1;
        views[i] = open->second.slots[i];
        bytes += open->second.slots[i].size();
      }
      if (ready->complete && keeping && open != held.end()) {
        keep(t, open, std::move(views), std::move(contributed), bytes, ready->attempt);
        continue;
      }
      TimesliceView view{t, ready->complete, views, contributed};
      view.attempt = ready->attempt;
      if (open != held.end()) {
        view.first_arrival = open->second.first_arrival;
        view.last_arrival = open->second.last_arrival;
      }
      const auto& user = ready->complete ? handler : options.on_incomplete;
      if (!ready->complete) {
        log(LogLevel::info, "scheduled push: compute node {} gives up time-slice {} (incomplete)", options.compute, t);
      }
      if (user) {
        try {
          user(view);
        } catch (const std::exception& e) {
          log(LogLevel::error, "scheduled push: compute node {}: the handler of time-slice {} threw: {}",
              options.compute, t, e.what());
        }
        if (!socket) return;  // the handler destroyed the receiver
      }
      if (open != held.end()) held.erase(open);
      {
        std::lock_guard lock(stats_mutex);
        stats.held_bytes -= bytes;
        ++(ready->complete ? stats.complete : stats.incomplete);
        if (ready->attempt > 0 && ready->complete) ++stats.reassigned_built;
      }
      for (const InputIndex i : node.release(t)) reply(i, encode(Credit{t, ready->complete}));
    }
  }

  // Hands complete time-slice t over to the KeepingHandler: its contributions move into a
  // Timeslice, and the credits wait for its release (released()).
  void keep(ns::TimesliceIndex t, std::map<ns::TimesliceIndex, Held>::iterator open,
            std::vector<std::span<const std::byte>> views, std::vector<std::uint8_t> contributed, std::uint64_t bytes,
            std::uint8_t attempt) {
    auto owned = std::make_unique<Timeslice::Owned>();
    owned->slots = std::move(open->second.slots);  // the views point into these buffers, which move along
    owned->views = std::move(views);
    owned->contributed = std::move(contributed);
    owned->view = TimesliceView{
        t, true, owned->views, owned->contributed, open->second.first_arrival, open->second.last_arrival, attempt};
    owned->bytes = bytes;
    owned->receiver = weak_from_this();
    held.erase(open);
    node.hand_over(t);
    {
      std::lock_guard lock(stats_mutex);
      ++stats.complete;
      ++stats.kept;
      if (attempt > 0) ++stats.reassigned_built;
    }
    try {
      keeping(Timeslice(std::move(owned)));
    } catch (const std::exception& e) {
      log(LogLevel::error, "scheduled push: compute node {}: the handler of time-slice {} threw: {}", options.compute,
          t, e.what());
    }
  }

  // A kept time-slice was released, on any thread: its credits go back on the loop thread.
  void released(ns::TimesliceIndex t, std::uint64_t bytes) noexcept {
    try {
      {
        std::lock_guard lock(lifetime_mutex);
        if (closed) return;  // the receiver is going: no credits to return any more
        if (!context.loop().in_loop_thread()) {
          context.loop().post([weak = weak_from_this(), t, bytes] {
            if (auto state = weak.lock()) state->free_kept(t, bytes);
          });
          return;
        }
      }
      // On the loop thread, which the receiver's teardown waits for; outside the lock, as
      // what free_kept() sets off may release another time-slice.
      free_kept(t, bytes);
    } catch (const std::exception& e) {
      log(LogLevel::error,
          "scheduled push: compute node {}: time-slice {} released, but its credits cannot go back: {}",
          options.compute, t, e.what());
    }
  }

  // On the loop thread.
  void free_kept(ns::TimesliceIndex t, std::uint64_t bytes) {
    if (!socket) return;  // closing
    {
      std::lock_guard lock(stats_mutex);
      stats.held_bytes -= bytes;
      --stats.kept;
    }
    for (const InputIndex i : node.release(t)) reply(i, encode(Credit{t, true}));
    check_drained();
  }

  void reply(InputIndex i, std::span<const std::byte> message) {
    Input& input = inputs[i];
    if (input.gone || !input.peer) return;
    if (input.pending_replies.empty()) {
      try {
        if (input.peer.try_reply(message)) return;
      } catch (const Error&) {
        return;  // the connection is gone; on_disconnected follows
      }
    }
    input.pending_replies.emplace_back(message.begin(), message.end());
  }

  void housekeeping() {
    for (auto& input : inputs) {
      while (!input.pending_replies.empty() && !input.gone) {
        try {
          if (!input.peer.try_reply(input.pending_replies.front())) break;
        } catch (const Error&) {
          input.pending_replies.clear();
          break;
        }
        input.pending_replies.pop_front();
      }
    }
    deliver();
    check_kept_stall();
    check_drained();
  }

  // Warns once when the consumer's kept Timeslices have held every credit for
  // kept_stall_warning: the inputs are waiting on the consumer, not on the network. The
  // senders only see push() time out, on other hosts, so this node says why.
  void check_kept_stall() {
    const auto threshold = options.kept_stall_warning;
    if (!keeping || threshold <= std::chrono::nanoseconds::zero()) return;
    std::uint64_t kept = 0, bytes = 0;
    {
      std::lock_guard lock(stats_mutex);
      kept = stats.kept;
      bytes = stats.held_bytes;
    }
    const auto t = now();
    if (kept < credits) {
      if (kept_stall_warned) {
        log(LogLevel::info,
            "scheduled push: compute node {}: a kept time-slice was released, the inputs go on "
            "(stalled for {} ms)",
            options.compute, std::chrono::duration_cast<std::chrono::milliseconds>(t - *kept_stall_since).count());
      }
      kept_stall_since.reset();
      kept_stall_warned = false;
      return;
    }
    if (!kept_stall_since) kept_stall_since = t;
    if (kept_stall_warned || t - *kept_stall_since < threshold) return;
    kept_stall_warned = true;
    {
      std::lock_guard lock(stats_mutex);
      ++stats.kept_stalls;
    }
    log(LogLevel::warn,
        "scheduled push: compute node {} at {}: the consumer has kept {} time-slices ({} bytes) "
        "unreleased for {} ms, every credit the inputs have for this node, so they cannot send it more; release or "
        "destroy the Timeslices it is done with",
        options.compute, local_endpoint().to_string(), kept, bytes,
        std::chrono::duration_cast<std::chrono::milliseconds>(t - *kept_stall_since).count());
  }

  Context& context;
  TimesliceReceiverOptions options;
  Handler handler;
  KeepingHandler keeping;  // instead of handler, when set
  BufferSizing sizing;
  std::uint32_t credits;  // per input: sizing.credits
  ns::ComputeNode node;
  std::vector<Input> inputs;
  std::map<ConnectionId, InputIndex> by_connection;
  std::map<InputIndex, bool> acknowledge;  // per input: it runs DFS and wants acknowledgements
  std::map<ns::TimesliceIndex, Held> held;
  std::set<ConnectionId> complained;
  std::set<ns::ComputeIndex> lost_heard;         // lost compute nodes an input told of (passed on to every input)
  ns::TimesliceIndex highest_received = 0;       // the highest time-slice a contribution came for
  std::optional<ns::TimesliceIndex> drain_from;  // draining: nothing from here on
  bool drain_by_load = false;                    // load: drain() asked the inputs (request_drain_by_load())
  std::vector<bool> farewells;                   // draining: per input, it sent everything below
  bool join_requested = false;                   // standby: join() was called
  std::optional<ns::TimesliceIndex> join_from;   // standby: its boundary, once a member named it
  std::set<ns::ComputeIndex> joins_named;        // standby slots this node named a boundary for
  std::map<InputIndex, ns::TimesliceIndex> input_boundaries_named;  // standby inputs' boundaries this node named
  bool drained = false;                                             // guarded by stats_mutex for readers off the loop
  std::condition_variable drained_changed;
  std::optional<ns::Time> kept_stall_since;  // since when the kept Timeslices hold every credit
  bool kept_stall_warned = false;
  Endpoint endpoint;
  EventLoop::TimerId timer = 0;
  mutable std::mutex stats_mutex;
  TimesliceReceiverStats stats;
  // Taken by released() (any thread) and by the destructor, which sets closed before it
  // tears down: a release either posts its credits while the receiver, and so its context,
  // is alive, or does nothing.
  std::mutex lifetime_mutex;
  bool closed = false;
  std::unique_ptr<DdeService> dde;
  MetricsRegistry::Registration metrics;            // scheduled_push_metrics.hpp: removed first by the destructor
  std::unique_ptr<LowLatencyReceiveSocket> socket;  // last: destroyed first
};

TimesliceReceiver::TimesliceReceiver(Context& context, const Endpoint& local, Handler handler,
                                     TimesliceReceiverOptions options)
    : TimesliceReceiver(context, local, std::move(options), std::move(handler), KeepingHandler{}) {}

TimesliceReceiver::TimesliceReceiver(Context& context, const Endpoint& local, KeepingHandler handler,
                                     TimesliceReceiverOptions options)
    : TimesliceReceiver(context, local, std::move(options), Handler{}, std::move(handler)) {}

TimesliceReceiver::TimesliceReceiver(Context& context, const Endpoint& local, TimesliceReceiverOptions options,
                                     Handler handler, KeepingHandler keeping)
    : state_(std::make_shared<State>(context, std::move(options), std::move(handler), std::move(keeping))) {
  State* state = state_.get();  // the socket and the timer die before the state (destructor)
  LowLatencyReceiveOptions socket_options;
  socket_options.max_message_size = contribution_header_size + state->options.max_contribution_bytes;
  // Per connection at most credits contributions are in flight, each answered by an
  // acknowledgement and a credit: the window holds them all, so try_reply() rarely says no.
  socket_options.reply_window = 2 * static_cast<std::size_t>(state->credits) + 4;
  socket_options.admission = state->options.admission;
  socket_options.events.on_disconnected = [state](const Peer& peer, const Error&) { state->on_disconnected(peer); };
  state->socket = std::make_unique<LowLatencyReceiveSocket>(
      context, local, [state](std::span<const std::byte> bytes, const Peer& peer) { state->on_message(bytes, peer); },
      socket_options);
  const Endpoint bound = state->socket->local_endpoint();
  {
    std::lock_guard lock(state->stats_mutex);
    state->endpoint = bound;
  }
  if (state->options.run_dde) {
    const Endpoint dde_local = state->options.dde_endpoint.value_or(bound.with_port(0));
    state->dde = std::make_unique<DdeService>(context, dde_local, state->options.config, DdeService::ProposalObserver{},
                                              state->options.admission, state->options.standby_inputs);
  }
  std::weak_ptr<State> weak = state_;
  state->timer = context.loop().add_timer(housekeeping_period(state->options.incomplete_timeout),
                                          housekeeping_period(state->options.incomplete_timeout), [weak] {
                                            if (auto s = weak.lock()) s->housekeeping();
                                          });
  state->metrics = detail::add_receiver_metrics(context, local_endpoint().to_string(), [this] { return stats(); });
}

TimesliceReceiver::~TimesliceReceiver() {
  state_->metrics.reset();
  {
    std::lock_guard lock(state_->lifetime_mutex);
    state_->closed = true;
  }
  auto& loop = state_->context.loop();
  loop.run_sync([this] {
    state_->context.loop().cancel_timer(state_->timer);
    state_->socket.reset();
    state_->dde.reset();
  });
  // Inside one of its own handlers (on the loop thread) the state, whose delivery is still on
  // the stack, is freed in a later loop task; deliver() stops once the socket is gone.
  if (loop.in_loop_thread()) loop.post([state = std::move(state_)] {});
}

Endpoint TimesliceReceiver::local_endpoint() const { return state_->local_endpoint(); }
std::optional<Endpoint> TimesliceReceiver::dde_endpoint() const {
  if (!state_->dde) return std::nullopt;
  return state_->dde->local_endpoint();
}
std::optional<DdeServiceStats> TimesliceReceiver::dde_stats() const {
  if (!state_->dde) return std::nullopt;
  return state_->dde->stats();
}
ns::TimesliceIndex TimesliceReceiver::drain() {
  ns::TimesliceIndex from = 0;
  state_->context.loop().run_sync([&] { from = state_->start_drain(); });
  return from;
}

void TimesliceReceiver::join() {
  state_->context.loop().run_sync([&] { state_->start_join(); });
}

bool TimesliceReceiver::wait_drained(std::chrono::nanoseconds timeout) {
  if (state_->context.loop().in_loop_thread()) {
    throw Error(Errc::would_block, "wait_drained() on the event-loop thread");
  }
  std::unique_lock lock(state_->stats_mutex);
  return state_->drained_changed.wait_for(lock, timeout, [&] { return state_->stats.drained; });
}

std::uint32_t TimesliceReceiver::credits_per_input() const noexcept { return state_->credits; }
std::uint64_t TimesliceReceiver::receive_buffer_bytes() const noexcept { return state_->sizing.buffer_bytes; }
TimesliceReceiverStats TimesliceReceiver::stats() const {
  std::lock_guard lock(state_->stats_mutex);
  return state_->stats;
}

Timeslice::Timeslice() noexcept = default;
Timeslice::Timeslice(std::unique_ptr<Owned> owned) noexcept : owned_(std::move(owned)) {}
Timeslice::Timeslice(Timeslice&&) noexcept = default;
Timeslice& Timeslice::operator=(Timeslice&& other) noexcept {
  if (this != &other) {
    release();
    owned_ = std::move(other.owned_);
  }
  return *this;
}
Timeslice::~Timeslice() { release(); }

const TimesliceView& Timeslice::view() const noexcept { return owned_->view; }

void Timeslice::release() noexcept {
  if (!owned_) return;
  const auto t = owned_->view.index;
  const auto bytes = owned_->bytes;
  auto receiver = std::move(owned_->receiver);
  owned_.reset();  // the memory first, then the credits that let more in
  if (auto state = receiver.lock()) state->released(t, bytes);
}

}  // namespace netio::scheduled_push
