// SPDX-License-Identifier: MIT
#include "netio/scheduled_push/timeslice_sender.hpp"

#include "scheduled_push_metrics.hpp"

#include "netio/backend/event_loop.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/internal/reject.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/scheduled_push/wire.hpp"
#include "netio/scheduler/assignment_messages.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/reassignment.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace netio::scheduled_push {

namespace ns = netio::scheduler;
using namespace std::chrono_literals;

namespace {

ns::Time now() { return std::chrono::steady_clock::now().time_since_epoch(); }

constexpr netio::detail::Rejecter reject{Errc::invalid_option, "scheduled push sender"};

constexpr auto health_period = 10ms;  // how often connections and welcomes are checked
constexpr auto retry_delay = 200us;   // after every send buffer was in flight

}  // namespace

struct TimesliceSender::State : std::enable_shared_from_this<State> {
  struct Compute {
    std::unique_ptr<LowLatencySendSocket> socket;
    bool welcomed = false;
    bool lost = false;
    ns::Time opened{0};
    // Retained contributions here (own and reassigned), and since when it last made progress
    // (a credit back, or the first send while it held nothing): the progress timeout.
    std::uint32_t outstanding = 0;
    ns::Time last_progress{0};
    std::uint32_t reassigned_out = 0;  // reassigned contributions here: at most its credits
    // The time-slices it credited last (at most twice its credits): built there, so if it is
    // lost they are not to be built again (the LostCompute message names them).
    std::deque<ns::TimesliceIndex> recently_built;
    // Messages that must reach it before any reassigned contribution (LostCompute), and
    // before any contribution of a slot rerouted here (Membership), oldest first.
    std::deque<std::vector<std::byte>> control_out;
    // Draining (membership.hpp): it builds nothing from this boundary on; this input's
    // farewell (the change sent back once it sent it everything below) is queued; it closed
    // after that with nothing of this input's outstanding: departed, not lost.
    std::optional<ns::TimesliceIndex> leaves_from;
    bool farewell_sent = false;
    bool departed = false;
  };
  struct Dde {
    std::unique_ptr<LowLatencySendSocket> socket;
    bool connected_once = false;
    bool lost = false;
    // Assignment by load: the load reports not handed to this DDE yet, oldest first. Unlike
    // DFS's reports, none may be missed: the coordinator decides once every input reported.
    std::deque<std::vector<std::byte>> load_reports;
  };

  // A contribution sent and not yet credited back (built), or waiting to be reassigned.
  struct Retained {
    ns::ComputeIndex own = 0;      // the node it was assigned to
    ns::ComputeIndex compute = 0;  // the node it was sent to (another when own was lost)
    std::uint8_t attempt = 0;      // its delivery number there
    std::vector<std::byte> message;
    bool was_sent = false;  // sent somewhere once (when nowhere is left: unbuilt, not undeliverable)
  };

  State(Context& ctx, TimesliceSenderOptions opts)
      : context(ctx),
        options(std::move(opts)),
        node(options.config, options.input, options.mode, options.standby_computes, options.standby) {
    if (options.compute_endpoints.size() != options.config.compute_count) {
      reject(fmt::format("{} compute endpoints for {} compute nodes", options.compute_endpoints.size(),
                         options.config.compute_count));
    }
    if (options.mode == ns::Mode::dfs && options.dde_endpoints.empty()) reject("DFS mode without a DDE endpoint");
    if (options.config.assignment == ns::Assignment::load && options.dde_endpoints.empty()) {
      reject("assignment by load without a DDE endpoint (the DDE assigns the time-slices)");
    }
    if (options.max_contribution_bytes == 0) reject("max_contribution_bytes is 0");
    if (options.queue_capacity == 0)
      options.queue_capacity = 2 * static_cast<std::size_t>(options.config.compute_count);
    if (options.queue_capacity < options.config.compute_count) {
      reject(fmt::format("queue_capacity {} is less than a round ({} compute nodes)", options.queue_capacity,
                         options.config.compute_count));
    }
  }

  // Loop thread: opens the connections and introduces this input.
  void start() {
    std::weak_ptr<State> weak = shared_from_this();
    const auto name = fmt::format("input-{}", options.input);
    computes.resize(options.compute_endpoints.size());
    for (ns::ComputeIndex c = 0; c < computes.size(); ++c) {
      LowLatencySendOptions socket_options;
      socket_options.buffer_count = 16;
      socket_options.buffer_size = contribution_header_size + options.max_contribution_bytes;
      socket_options.identity.name = name;
      // A node not there is this input's health check's to judge; a standby slot (it joins
      // later) is tried until it is there.
      socket_options.connect_timeout = standby(c) ? connect_forever : connect_once;
      socket_options.replies.credits = 64;
      socket_options.replies.on_reply = [weak, c](std::span<const std::byte> reply) {
        if (auto state = weak.lock()) state->on_data_reply(c, reply);
      };
      computes[c].opened = now();
      computes[c].socket =
          std::make_unique<LowLatencySendSocket>(context, options.compute_endpoints[c], socket_options);
      const Hello hello{options.input,
                        c,
                        options.config.input_count,
                        options.config.compute_count,
                        options.config.timeslices_in_interval(),
                        options.max_contribution_bytes,
                        options.mode,
                        options.standby};
      try {
        if (!computes[c].socket->try_send(encode(hello))) lose(c, "no send buffer for the hello");
      } catch (const Error& e) {
        lose(c, e.what());
      }
    }
    if (options.mode == ns::Mode::dfs || options.config.assignment == ns::Assignment::load) {
      ddes.resize(options.dde_endpoints.size());
      for (std::size_t d = 0; d < ddes.size(); ++d) {
        LowLatencySendOptions socket_options;
        socket_options.buffer_count = 16;
        socket_options.buffer_size = std::max<std::size_t>(
            256, ns::encoded_size_of_load_report(options.config.compute_count, options.config.input_count));
        socket_options.identity.name = name;
        socket_options.connect_timeout = connect_once;
        socket_options.replies.credits = 64;
        socket_options.replies.on_reply = [weak, d](std::span<const std::byte> reply) {
          if (auto state = weak.lock()) state->on_proposal(d, reply);
        };
        ddes[d].socket = std::make_unique<LowLatencySendSocket>(context, options.dde_endpoints[d], socket_options);
      }
    }
    health_timer = context.loop().add_timer(health_period, health_period, [weak] {
      if (auto state = weak.lock()) state->check_health();
    });
  }

  // Loop thread: closes everything, waits for nothing.
  void stop() {
    stopped = true;
    auto& loop = context.loop();
    loop.cancel_timer(health_timer);
    if (due_timer != 0) loop.cancel_timer(due_timer);
    if (retry_timer != 0) loop.cancel_timer(retry_timer);
    for (auto& compute : computes) compute.socket.reset();
    for (auto& dde : ddes) dde.socket.reset();
    {
      std::lock_guard lock(queue_mutex);
      closed = true;
    }
    changed.notify_all();
  }

  void on_data_reply(ns::ComputeIndex c, std::span<const std::byte> reply) {
    if (stopped || computes[c].lost) return;
    try {
      switch (wire_type(reply)) {
        case WireType::welcome: {
          const auto welcome = decode_welcome(reply);
          if (welcome.compute != c)
            throw Error(Errc::protocol_error, fmt::format("welcome from compute node {}", welcome.compute));
          node.grant(c, welcome.credits);
          computes[c].welcomed = true;
          // A member takes the standby slots' time-slices from the start: it hears of them first.
          for (const auto s : options.standby_computes) {
            if (s == c) continue;
            const auto bytes = encode(ns::MembershipChange{s, false, 0});
            computes[c].control_out.push_back({bytes.begin(), bytes.end()});
          }
          break;
        }
        case WireType::refusal: lose(c, "it refused this input: " + decode_refusal(reply)); break;
        case WireType::lost_compute: {
          const auto lost = decode_lost_compute(reply);
          if (lost.compute >= computes.size())
            throw Error(Errc::protocol_error, fmt::format("lost compute node {} out of range", lost.compute));
          lose(lost.compute, fmt::format("compute node {} says another input lost it", c));
          break;
        }
        case WireType::membership: take_membership(c, decode_membership(reply)); break;
        case WireType::input_join: take_input_join(c, decode_input_join(reply)); break;
        case WireType::acknowledgement:
          if (auto done = node.on_acknowledged(decode_acknowledgement(reply), now())) report(*done);
          break;
        case WireType::credit: {
          const auto credit = decode_credit(reply);
          if (!release(credit.timeslice, c)) node.on_credit(c);  // a reassigned one is outside the credits
          std::lock_guard lock(stats_mutex);
          ++stats.credits_returned;
          if (!credit.complete) ++stats.incomplete_credits;
          break;
        }
        default: throw Error(Errc::protocol_error, "a data message sent back as a reply");
      }
    } catch (const Error& e) {
      lose(c, std::string("bad reply: ") + e.what());
    }
    drive();
  }

  // The start handshake (control_messages.hpp): probe 0 when the connection is up, probe 1
  // with the round trip of probe 0 when its echo is back.
  void send_clock_probe(std::size_t d, std::uint32_t sequence, std::optional<ns::Duration> round_trip) {
    const ns::ClockProbe probe{options.input, sequence, now(), round_trip};
    try {
      (void)ddes[d].socket->try_send(ns::encode(probe));  // a probe that does not go now is skipped
    } catch (const Error& e) {
      lose_dde(d, e.what());
    }
  }

  // DFS: the clock sample of an interval that has just started (InputEngine::take_clock_sample),
  // to every DDE connected. Never waits: a sample that does not go now is skipped.
  void send_clock_sample() {
    const auto sample = node.take_clock_sample();
    if (!sample) return;
    const auto bytes = ns::encode(*sample);
    for (std::size_t d = 0; d < ddes.size(); ++d) {
      if (ddes[d].lost || !ddes[d].socket->connected()) continue;
      try {
        (void)ddes[d].socket->try_send(bytes);
      } catch (const Error& e) {
        lose_dde(d, e.what());
      }
    }
  }

  void on_proposal(std::size_t d, std::span<const std::byte> reply) {
    if (stopped || ddes[d].lost) return;
    try {
      if (ns::control_message_type(reply) == static_cast<std::uint8_t>(WireType::input_join)) {
        take_input_join_request(d, decode_input_join(reply));
        return;
      }
      if (ns::control_message_type(reply) == ns::assignment_type) {
        const auto assignment = ns::decode_assignment(reply);
        if (node.on_assignment(assignment)) {
          take_decided_changes(assignment);
          std::lock_guard lock(stats_mutex);
          // A standby input takes only the compute changes of an assignment before its own.
          if (node.started()) ++stats.assignments_taken;
        }
        drive();
        return;
      }
      if (ns::message_type(reply) == ns::MessageType::clock_echo) {
        const auto echo = ns::decode_clock_echo(reply);
        if (echo.sequence == 0) send_clock_probe(d, 1, now() - echo.probe_sent_at);
        return;
      }
      if (node.on_proposal(ns::decode_proposal(reply))) {
        std::lock_guard lock(stats_mutex);
        ++stats.proposals_taken;
      }
    } catch (const Error& e) {
      lose_dde(d, std::string("bad proposal: ") + e.what());
      return;
    }
    drive();
  }

  // join(): asks the lowest member compute node not lost to name this input's boundary; under
  // assignment by load asks every DDE replica, which passes the request on to every member
  // input (they flag it in their load reports until the coordinator names the boundary).
  void request_join() {
    if (!options.standby) {
      throw Error(Errc::invalid_option,
                  fmt::format("input {}: join() without options.standby (it is a member already)", options.input));
    }
    if (join_requested) return;
    if (options.config.assignment == ns::Assignment::load) {
      if (std::all_of(ddes.begin(), ddes.end(), [](const Dde& dde) { return dde.lost; })) {
        throw Error(Errc::closed, fmt::format("input {}: join() with no DDE replica left", options.input));
      }
      join_requested = true;
      tell_ddes(encode(InputJoin{options.input, 0}));
      log(LogLevel::info, "scheduled push: input {} asks the coordinator to name when it joins", options.input);
      return;
    }
    constexpr auto ever = std::numeric_limits<ns::TimesliceIndex>::max();
    for (ns::ComputeIndex m = 0; m < computes.size(); ++m) {
      if (computes[m].lost || !node.membership().member(m, ever)) continue;
      join_requested = true;
      const auto bytes = encode(InputJoin{options.input, 0});
      computes[m].control_out.push_back({bytes.begin(), bytes.end()});
      log(LogLevel::info, "scheduled push: input {} asks compute node {} ({}) to name when it joins", options.input, m,
          options.compute_endpoints[m].to_string());
      drive();
      return;
    }
    throw Error(Errc::closed, fmt::format("input {}: join() with no member compute node left", options.input));
  }

  // A compute node named standby input x's boundary T (or passed on what it heard): x
  // contributes from T on. Every compute node hears it from this input before any of this
  // input's contributions at or above T (the control messages go first); the joiner itself
  // starts its stream at T.
  void take_input_join(ns::ComputeIndex c, const InputJoin& join) {
    if (join.input >= options.config.input_count || join.from == 0 ||
        join.from % options.config.timeslices_in_interval() != 0) {
      throw Error(Errc::protocol_error,
                  fmt::format("compute node {} says input {} joins from {}", c, join.input, join.from));
    }
    if (!inputs_joining.emplace(join.input, join.from).second) {
      if (inputs_joining[join.input] != join.from) {
        log(LogLevel::error,
            "scheduled push: input {}: compute node {} says input {} joins from {}, but it joins from {}",
            options.input, c, join.input, join.from, inputs_joining[join.input]);
      }
      return;
    }
    if (join.input == options.input && !options.standby) {
      throw Error(Errc::protocol_error, fmt::format("compute node {} says this input, not on standby, joins", c));
    }
    pass_input_join(join, c);
  }

  // Standby input x joins from T: every compute node but `except` (the one that named it) and
  // every DDE replica hear it from this input, ahead of this input's contributions and
  // reports from T on; the joiner itself starts its stream at T (under load its input node
  // started with the assignment naming it).
  void pass_input_join(const InputJoin& join, ns::ComputeIndex except) {
    tell_live_computes(encode(join), except);
    tell_ddes(encode(join));
    if (join.input == options.input) {
      {
        std::lock_guard lock(queue_mutex);
        if (!node.started()) node.start_at(join.from);
        next_push = join.from;
        joined_from = join.from;
      }
      changed.notify_all();
      log(LogLevel::info, "scheduled push: input {} joins: it contributes from time-slice {} on", options.input,
          join.from);
      std::lock_guard lock(stats_mutex);
      stats.join_from = join.from;
      return;
    }
    log(LogLevel::info, "scheduled push: input {}: input {} joins from time-slice {}", options.input, join.input,
        join.from);
    std::lock_guard lock(stats_mutex);
    ++stats.inputs_joined;
  }

  // Assignment by load: a DDE replica passes on standby input x's request to join ({x, 0}):
  // flagged in this input's load reports until an assignment names x's boundary.
  void take_input_join_request(std::size_t d, const InputJoin& join) {
    if (join.from != 0 || options.config.assignment != ns::Assignment::load) {
      throw Error(Errc::protocol_error, fmt::format("DDE {} sent input {} joining from {}: only a request (from 0) "
                                                    "under assignment by load is a DDE's",
                                                    d, join.input, join.from));
    }
    if (!node.request_input_join(join.input)) return;
    log(LogLevel::info, "scheduled push: input {}: input {} asks to join; the coordinator names when", options.input,
        join.input);
  }

  // DFS: an input's join reaches every DDE replica ahead of this input's reports from its
  // boundary's interval on (report() holds a report back while one waits), so that each
  // replica's history counts the joiner from that interval on, as the others' do.
  void tell_ddes(std::span<const std::byte> bytes) {
    for (std::size_t d = 0; d < ddes.size(); ++d) {
      if (!ddes[d].lost) dde_joins_out[d].emplace_back(bytes.begin(), bytes.end());
    }
    (void)send_dde_joins(ddes.size());
  }

  // Hands what waits in dde_joins_out to the DDEs (or to DDE `only`); true when nothing waits
  // for `only` any more (a lost DDE waits for nothing).
  bool send_dde_joins(std::size_t only) {
    for (auto& [d, out] : dde_joins_out) {
      if (only < ddes.size() && d != only) continue;
      try {
        while (!ddes[d].lost && !out.empty() && ddes[d].socket->connected() && ddes[d].socket->try_send(out.front()))
          out.pop_front();
      } catch (const Error& e) {
        lose_dde(d, e.what());
      }
      if (ddes[d].lost) out.clear();
    }
    if (only >= ddes.size()) return true;
    const auto it = dde_joins_out.find(only);
    return it == dde_joins_out.end() || it->second.empty();
  }

  bool standby(ns::ComputeIndex c) const {
    return std::find(options.standby_computes.begin(), options.standby_computes.end(), c) !=
           options.standby_computes.end();
  }

  // A membership message from compute node c (wire.hpp):
  //   - c drains: {c, leaves, T}, T named by c;
  //   - c, a standby slot, asks to join: {c, joins, 0}: passed on to the lowest member this
  //     input has not lost, which names the boundary (its credits bound how far ahead every
  //     input is, as a draining node's do; the joiner, sent nothing yet, knows nothing);
  //   - member c names slot x's join boundary: {x, joins, T}.
  // Every other node hears of a change before any time-slice it routes there (the joiner of
  // its boundary); a draining node hears it back once this input sent it everything below
  // the boundary (send_farewells()). Each node names its boundary far enough ahead that
  // this input has not sent into its round yet.
  void take_membership(ns::ComputeIndex c, const ns::MembershipChange& change) {
    if (options.config.assignment == ns::Assignment::load) {
      take_request_by_load(c, change);
      return;
    }
    const bool request = change.joins && change.from == 0;
    if (request) {
      if (change.compute != c || !standby(c))
        throw Error(Errc::protocol_error,
                    fmt::format("compute node {} asked to join as slot {}, not a standby slot", c, change.compute));
      if (joins_requested.insert(c).second) forward_join_request(c);
      return;
    }
    if (change.joins ? change.compute == c : change.compute != c) {
      throw Error(Errc::protocol_error, fmt::format("compute node {} announced that slot {} {}", c, change.compute,
                                                    change.joins ? "joins" : "leaves"));
    }
    if (change.joins) {
      take_join(c, change);
      return;
    }
    bool added = false;
    try {
      added = node.on_membership(change);
    } catch (const Error& e) {
      // Not reached when the node names its boundary as it does (timeslice_receiver.cpp): its
      // credits bound how far ahead this input can be.
      log(LogLevel::error, "scheduled push: input {}: {}", options.input, e.what());
      lose(c, "it drains from a time-slice this input has passed");
      return;
    }
    if (!added) return;
    computes[c].leaves_from = change.from;
    log(LogLevel::info, "scheduled push: input {}: compute node {} ({}) drains: none of its time-slices from {} on",
        options.input, c, options.compute_endpoints[c].to_string(), change.from);
    tell_live_computes(encode(change), c);
    {
      std::lock_guard lock(stats_mutex);
      ++stats.computes_draining;
    }
    send_farewells();
  }

  // Queues a control message for every compute node not lost but `except` (the one it came
  // from or is about), ahead of further contributions to it.
  void tell_live_computes(std::span<const std::byte> bytes, ns::ComputeIndex except) {
    for (ns::ComputeIndex d = 0; d < computes.size(); ++d) {
      if (d != except && !computes[d].lost) computes[d].control_out.emplace_back(bytes.begin(), bytes.end());
    }
  }

  // Assignment by load: the coordinator names every boundary (docs/design/assignment.md), so a
  // compute node's membership message is a request only, {c, leaves, 0} (c drains) or
  // {c, joins, 0} (standby slot c joins): flagged in this input's load reports until a decision
  // names the change (take_decided_changes()).
  void take_request_by_load(ns::ComputeIndex c, const ns::MembershipChange& change) {
    if (change.compute != c || change.from != 0 || (change.joins && !standby(c))) {
      throw Error(Errc::protocol_error,
                  fmt::format("compute node {} sent slot {} {} from {}: under assignment by load only a request "
                              "of its own (from 0) is taken",
                              c, change.compute, change.joins ? "joins" : "leaves", change.from));
    }
    if (!node.request_change(c, change.joins)) return;
    log(LogLevel::info, "scheduled push: input {}: compute node {} ({}) asks to {}; the coordinator names when",
        options.input, c, options.compute_endpoints[c].to_string(), change.joins ? "join" : "drain");
  }

  // Assignment by load: the membership changes an assignment named (the input node took them).
  // As on the fixed path: every other live node hears of a change before any time-slice it
  // routes there, the joiner of its boundary; a draining node gets this input's farewell once
  // it was sent everything below the boundary (send_farewells()), which tells it the boundary.
  void take_decided_changes(const ns::IntervalAssignment& assignment) {
    for (const auto& change : assignment.changes) {
      const auto c = change.compute;
      log(LogLevel::info,
          "scheduled push: input {}: the coordinator names time-slice {} for compute node {} ({}) to {}", options.input,
          change.from, c, options.compute_endpoints[c].to_string(), change.joins ? "join" : "leave");
      tell_live_computes(encode(change), change.joins ? ns::ComputeIndex(computes.size()) : c);
      if (!change.joins) computes[c].leaves_from = change.from;
      std::lock_guard lock(stats_mutex);
      ++(change.joins ? stats.computes_joined : stats.computes_draining);
    }
    // A standby input joins: as on the fixed path, from here on, every compute node told.
    for (const auto& join : assignment.input_joins) {
      if (!inputs_joining.emplace(join.input, join.from).second) continue;
      log(LogLevel::info, "scheduled push: input {}: the coordinator names time-slice {} for input {} to join",
          options.input, join.from, join.input);
      pass_input_join(InputJoin{join.input, join.from}, ns::ComputeIndex(computes.size()));
    }
    send_farewells();
  }

  // A standby slot asked to join: the lowest member not lost names its boundary.
  void forward_join_request(ns::ComputeIndex joiner) {
    const auto position = node.sent_count();
    for (ns::ComputeIndex m = 0; m < computes.size(); ++m) {
      if (computes[m].lost || !node.membership().member(m, position)) continue;
      const auto bytes = encode(ns::MembershipChange{joiner, true, 0});
      computes[m].control_out.push_back({bytes.begin(), bytes.end()});
      log(LogLevel::info, "scheduled push: input {}: compute node {} asks to join; compute node {} names when",
          options.input, joiner, m);
      return;
    }
    log(LogLevel::warn, "scheduled push: input {}: compute node {} asks to join, but no member is left to name when",
        options.input, joiner);
  }

  // Member m named slot x's join boundary: from change.from on x builds its time-slices.
  void take_join(ns::ComputeIndex m, const ns::MembershipChange& change) {
    const auto x = change.compute;
    if (x >= computes.size() || !standby(x)) {
      throw Error(Errc::protocol_error,
                  fmt::format("compute node {} announced that slot {} joins, not a standby slot", m, x));
    }
    bool added = false;
    try {
      added = node.on_membership(change);
    } catch (const Error& e) {
      log(LogLevel::error, "scheduled push: input {}: {}; slot {} stays out", options.input, e.what(), x);
      return;
    }
    if (!added) return;
    log(LogLevel::info, "scheduled push: input {}: compute node {} ({}) joins: its time-slices from {} on",
        options.input, x, options.compute_endpoints[x].to_string(), change.from);
    tell_live_computes(encode(change), m);
    std::lock_guard lock(stats_mutex);
    ++stats.computes_joined;
  }

  // A draining node gets this input's farewell once this input sent it everything below its
  // boundary: every visit below the boundary done (or everything pushed sent), and no
  // reassigned contribution below it still waiting.
  void send_farewells() {
    bool all_sent = false;
    {
      std::lock_guard lock(queue_mutex);
      all_sent = everything_sent();
    }
    for (ns::ComputeIndex c = 0; c < computes.size(); ++c) {
      auto& compute = computes[c];
      if (!compute.leaves_from || compute.farewell_sent || compute.lost) continue;
      const auto from = *compute.leaves_from;
      if (node.sent_count() < from && !all_sent) continue;
      if (!to_reassign.empty() && to_reassign.begin()->first < from) continue;
      const auto bytes = encode(ns::MembershipChange{c, false, from});
      compute.control_out.push_back({bytes.begin(), bytes.end()});
      compute.farewell_sent = true;
    }
  }

  // c drained: it closed after this input's farewell, holding nothing of this input's. Not a
  // loss: nothing is reassigned, nothing counted lost.
  void depart(ns::ComputeIndex c) {
    computes[c].departed = true;
    computes[c].lost = true;  // nothing more goes there, and nothing is expected from it
    if (computes[c].socket) computes[c].socket->close();
    log(LogLevel::info, "scheduled push: input {}: compute node {} ({}) drained and left", options.input, c,
        options.compute_endpoints[c].to_string());
    std::lock_guard lock(stats_mutex);
    ++stats.computes_drained;
  }

  // Retention: a contribution sent is kept until its compute node returns the credit.
  void retain(ns::TimesliceIndex t, Retained entry) {
    auto& compute = computes[entry.compute];
    if (compute.outstanding++ == 0) compute.last_progress = now();  // the progress timeout starts
    if (entry.attempt > 0) ++compute.reassigned_out;
    retained.insert_or_assign(t, std::move(entry));
    std::lock_guard lock(stats_mutex);
    stats.retained = retained.size();
    stats.peak_retained = std::max(stats.peak_retained, stats.retained);
  }

  // c credited t: it built t (or gave it up), so the copy goes. True when t was a reassigned
  // contribution (outside c's credits).
  bool release(ns::TimesliceIndex t, ns::ComputeIndex c) {
    const auto it = retained.find(t);
    if (it == retained.end() || it->second.compute != c) {
      throw Error(Errc::protocol_error, fmt::format("a credit for time-slice {}, not outstanding there", t));
    }
    const bool reassigned = it->second.attempt > 0;
    retained.erase(it);
    auto& compute = computes[c];
    --compute.outstanding;
    if (reassigned) --compute.reassigned_out;
    compute.last_progress = now();
    compute.recently_built.push_back(t);
    while (compute.recently_built.size() > 2 * std::size_t{std::max(node.granted(c), 1u)})
      compute.recently_built.pop_front();
    std::lock_guard lock(stats_mutex);
    stats.retained = retained.size();
    return reassigned;
  }

  // Compute node c is lost: every other node hears which of its time-slices this input knows
  // built (before any reassigned contribution), and what c never built goes to the others
  // (reassignment.hpp), in index order.
  void reassign_from(ns::ComputeIndex c) {
    LostCompute notice{c, {computes[c].recently_built.begin(), computes[c].recently_built.end()}};
    tell_live_computes(encode(notice), c);  // c is lost already
    for (auto it = retained.begin(); it != retained.end();) {
      if (it->second.compute != c) {
        ++it;
        continue;
      }
      to_reassign.insert_or_assign(it->first, std::move(it->second));
      it = retained.erase(it);
    }
    computes[c].outstanding = 0;
    computes[c].reassigned_out = 0;
    // The others waited for c too (their time-slices wait for inputs that waited for c): each
    // gets a whole progress_timeout from now on before it counts as stuck.
    const auto t = now();
    for (auto& compute : computes) compute.last_progress = t;
    std::lock_guard lock(stats_mutex);
    stats.retained = retained.size();
  }

  // Sends what waits: the LostCompute notices, then the reassigned contributions, each to the
  // node reroute() names now, as far as its window (its credits) and send buffers allow.
  void send_reassigned() {
    for (ns::ComputeIndex d = 0; d < computes.size(); ++d) {
      auto& compute = computes[d];
      try {
        while (!compute.lost && compute.welcomed && !compute.control_out.empty() &&
               compute.socket->try_send(compute.control_out.front()))
          compute.control_out.pop_front();
      } catch (const Error& e) {
        lose(d, e.what());
        return;  // lose() reshuffled what waits; the drive it posts comes back here
      }
    }
    std::vector<bool> blocked(computes.size(), false);
    for (auto it = to_reassign.begin(); it != to_reassign.end();) {
      const auto t = it->first;
      auto& entry = it->second;
      // Around the nodes lost and the slots not members at t (the same on every input).
      auto lost_now = node.membership().non_members(t);
      for (ns::ComputeIndex d = 0; d < computes.size(); ++d) lost_now[d] = lost_now[d] || computes[d].lost;
      const auto where = ns::reroute(t, entry.own, lost_now);
      if (!where) {  // every compute node is lost
        std::lock_guard lock(stats_mutex);
        ++(entry.was_sent ? stats.unbuilt : stats.undeliverable);
        if (options.on_undeliverable) options.on_undeliverable(t, entry.own);
        it = to_reassign.erase(it);
        continue;
      }
      auto& target = computes[where->compute];
      if (blocked[where->compute] || !target.welcomed || !target.control_out.empty() ||
          target.reassigned_out >= node.granted(where->compute)) {
        blocked[where->compute] = true;  // later ones to it wait too: index order
        ++it;
        continue;
      }
      set_contribution_attempt(entry.message, where->attempt);
      bool sent = false;
      try {
        sent = target.socket->try_send(entry.message);
      } catch (const Error& e) {
        lose(where->compute, e.what());
        return;
      }
      if (!sent) {  // every send buffer in flight
        arm(retry_timer, retry_delay);
        return;
      }
      entry.compute = where->compute;
      entry.attempt = where->attempt;
      entry.was_sent = true;
      retain(t, std::move(entry));
      it = to_reassign.erase(it);
      std::lock_guard lock(stats_mutex);
      ++stats.reassigned;
    }
  }

  // Assignment by load: the report of an interval just sent, queued for every DDE; and the
  // queued ones handed over as far as the connections take them now.
  void send_load_report() {
    const auto report = node.take_load_report();
    if (report) {
      const auto bytes = ns::encode(*report);
      for (auto& dde : ddes) {
        if (!dde.lost) dde.load_reports.push_back(bytes);
      }
    }
    for (std::size_t d = 0; d < ddes.size(); ++d) {
      auto& dde = ddes[d];
      try {
        while (!dde.lost && !dde.load_reports.empty() && dde.socket->connected() &&
               dde.socket->try_send(dde.load_reports.front())) {
          dde.load_reports.pop_front();
        }
      } catch (const Error& e) {
        lose_dde(d, e.what());
      }
    }
  }

  // DFS, with on_interval: the plan an interval is paced by is fixed at its first send.
  void note_plan(ns::TimesliceIndex t) {
    const auto* engine = node.engine();
    if (engine == nullptr || !options.on_interval) return;
    const auto j = engine->layout().interval_of(t);
    if (plans.contains(j)) return;
    auto plan = engine->plan(j);
    if (plan && plan->best_effort) plan.reset();  // the DDE's fallback: sent best-effort
    plans.emplace(j, plan);
  }

  void report(const ns::IntervalCompletion& done) {
    if (options.on_interval) {
      IntervalOutcome outcome{done.report, std::nullopt};
      if (const auto it = plans.find(done.report.interval); it != plans.end()) {
        outcome.plan = it->second;
        plans.erase(plans.begin(), std::next(it));
      }
      options.on_interval(outcome);
    }
    const auto report = ns::encode(done.report);
    const auto request = ns::encode(done.request);
    for (std::size_t d = 0; d < ddes.size(); ++d) {
      // A DDE not connected yet misses the report rather than getting it late: its Clock
      // Synchronizer takes the arrival time as the interval's end, so a report queued while
      // connecting would skew its offsets (and its proposals) by the connection's set-up time.
      bool handed = false;
      if (!ddes[d].lost && ddes[d].socket->connected() && send_dde_joins(d)) {
        try {
          // Never waits: a DDE that cannot take it now misses this report (it proposes from the others').
          handed = ddes[d].socket->try_send(report) && ddes[d].socket->try_send(request);
        } catch (const Error& e) {
          lose_dde(d, e.what());
        }
      }
      std::lock_guard lock(stats_mutex);
      ++(handed ? stats.reports_sent : stats.reports_missed);
    }
  }

  void lose(ns::ComputeIndex c, const std::string& why) {
    if (computes[c].lost) return;
    computes[c].lost = true;
    log(LogLevel::warn, "scheduled push: input {} lost compute node {} ({}): {}; its time-slices go to the others",
        options.input, c, options.compute_endpoints[c].to_string(), why);
    for (const auto& done : node.on_compute_lost(c, now())) report(done);
    reassign_from(c);
    if (computes[c].socket) computes[c].socket->close();
    {
      std::lock_guard lock(stats_mutex);
      ++stats.computes_lost;
      stats.lost_computes.push_back(c);
    }
    post_drive();
  }

  void lose_dde(std::size_t d, const std::string& why) {
    if (ddes[d].lost) return;
    ddes[d].lost = true;
    log(LogLevel::warn, "scheduled push: input {} dropped DDE {}: {}", options.input,
        options.dde_endpoints[d].to_string(), why);
    if (ddes[d].socket) ddes[d].socket->close();
    ddes[d].load_reports.clear();  // the other replicas have their own copies
    std::lock_guard lock(stats_mutex);
    ++stats.ddes_lost;
    stats.lost_ddes.push_back(d);
  }

  void check_health() {
    if (stopped) return;
    const auto t = now();
    // The progress timeout judges only the node that holds this input's oldest contribution
    // not credited back: when one node stops, the others stop returning credits too (their
    // time-slices wait for inputs that wait for that node), but what they hold is newer.
    const auto oldest_holder = retained.empty() ? ns::ComputeIndex(computes.size()) : retained.begin()->second.compute;
    for (ns::ComputeIndex c = 0; c < computes.size(); ++c) {
      auto& compute = computes[c];
      if (compute.lost) continue;
      if (compute.welcomed && !compute.socket->connected()) {
        if (compute.farewell_sent && compute.control_out.empty() && compute.outstanding == 0) {
          depart(c);
        } else {
          lose(c, compute.leaves_from ? "the connection failed while it drained" : "the connection failed");
        }
      } else if (!compute.welcomed && !standby(c) && t - compute.opened > options.welcome_timeout) {
        lose(c, fmt::format("no welcome within {} ms",
                            std::chrono::duration_cast<std::chrono::milliseconds>(options.welcome_timeout).count()));
      } else if (options.progress_timeout > 0ns && c == oldest_holder && compute.outstanding > 0 &&
                 t - compute.last_progress > options.progress_timeout) {
        lose(c, fmt::format("no progress: no credit back for {} ms while it holds {} of this input's contributions",
                            std::chrono::duration_cast<std::chrono::milliseconds>(options.progress_timeout).count(),
                            compute.outstanding));
      }
    }
    for (std::size_t d = 0; d < ddes.size(); ++d) {
      if (ddes[d].lost) continue;
      if (ddes[d].socket->connected()) {
        if (!ddes[d].connected_once) send_clock_probe(d, 0, std::nullopt);
        ddes[d].connected_once = true;
      } else if (ddes[d].connected_once) {
        lose_dde(d, "the connection failed");
      } else if (const auto failure = ddes[d].socket->failure()) {
        // Never up (refused, or not there: one attempt): its load reports would queue for ever.
        lose_dde(d, failure->what());
      }
    }
    send_load_report();  // what a DDE not connected yet could not take
    (void)send_dde_joins(ddes.size());
    drive();
  }

  // queue_mutex held. After finish(), when the last round is not whole: time-slice t of it was
  // never pushed, but this input's order in the round (its DFS offset) puts t before pushed
  // ones. It is passed over, not waited for (no input has it: nobody builds it).
  bool beyond_the_end(ns::TimesliceIndex t) const { return finished && node.layout().beyond_the_end(t, next_push); }
  // queue_mutex held: everything pushed is sent (or handed on) and finish() was called.
  bool everything_sent() const { return finished && node.sent_count() == next_push + passed_beyond_the_end; }

  // Assignment by load: a wait counts from the first drive that had the time-slice pushed but
  // not its interval's assignment, to the first send after it.
  void note_assignment_wait(ns::TimesliceIndex t, ns::Time t_now) {
    if (assignment_wait_since) return;
    {
      std::lock_guard lock(queue_mutex);
      if (!queue.contains(t)) return;  // nothing to send yet: the application's wait, not this
    }
    assignment_wait_since = t_now;
  }
  void end_assignment_wait(ns::Time t_now) {
    if (!assignment_wait_since) return;
    const auto waited = t_now - *std::exchange(assignment_wait_since, std::nullopt);
    std::lock_guard lock(stats_mutex);
    ++stats.assignment_waits;
    stats.assignment_wait_ns += static_cast<std::uint64_t>(waited.count());
  }

  void post_drive() {
    std::weak_ptr<State> weak = shared_from_this();
    context.loop().post([weak] {
      if (auto state = weak.lock()) state->drive();
    });
  }

  // Loop thread: sends whatever the engine allows now.
  void drive() {
    if (stopped) return;
    send_reassigned();
    using What = ns::InputNode::Next::What;
    for (;;) {
      const auto t_now = now();
      const auto next = node.next(t_now);
      if (next.what == What::wait_until) {
        arm(due_timer, next.due - t_now);
        break;
      }
      if (next.what == What::wait_for_assignment) {
        note_assignment_wait(next.timeslice, t_now);
        break;  // the assignment calls again
      }
      if (next.what != What::send && next.what != What::skip) break;  // a credit or acknowledgement calls again
      end_assignment_wait(t_now);
      // A lost node's time-slice goes to another (send_reassigned()); a bounded number wait.
      if (next.what == What::skip && to_reassign.size() >= options.queue_capacity) break;  // a credit calls again
      bool sent = false;
      bool past_end = false;
      std::optional<std::string> failure;
      {
        // Held across try_send(), which never waits here: the message is sent from the queue without a copy.
        std::lock_guard lock(queue_mutex);
        const auto it = queue.find(next.timeslice);
        if (it == queue.end()) {
          if (!beyond_the_end(next.timeslice)) break;  // not pushed yet: push() calls again
          past_end = true;
          ++passed_beyond_the_end;
        } else if (next.what == What::send && !computes[next.compute].control_out.empty()) {
          // A membership notice first: it must reach the node before a rerouted time-slice.
          arm(retry_timer, retry_delay);
          break;
        } else {
          if (next.what == What::send) {
            try {
              sent = computes[next.compute].socket->try_send(it->second);
            } catch (const Error& e) {
              failure = e.what();
            }
            if (!sent && !failure) {  // every send buffer in flight
              arm(retry_timer, retry_delay);
              break;
            }
          }
          if (sent) retain(next.timeslice, Retained{next.compute, next.compute, 0, std::move(it->second), true});
          if (next.what == What::skip) {
            to_reassign.insert_or_assign(next.timeslice,
                                         Retained{next.compute, next.compute, 0, std::move(it->second), false});
          }
          if (sent || next.what == What::skip) queue.erase(it);
        }
      }
      if (past_end) {  // nothing to send or reassign: only this input's place in the round is passed
        if (auto done = node.on_skipped(next.timeslice, t_now)) report(*done);
        continue;
      }
      changed.notify_all();
      if (failure) {
        lose(next.compute, *failure);  // the next round skips it
        continue;
      }
      if (sent) {
        node.on_sent(next.timeslice, t_now);
        send_clock_sample();
        send_load_report();
        note_plan(next.timeslice);
        std::lock_guard lock(stats_mutex);
        ++stats.sent;
        if (next.paced) {
          ++stats.paced_sent;
          stats.paced_lateness += t_now - next.due;  // sent only once due: never negative
        }
        continue;
      }
      if (auto done = node.on_skipped(next.timeslice, t_now)) report(*done);
      send_clock_sample();
      send_load_report();
      send_reassigned();
    }
    send_farewells();
    update_done();
  }

  void arm(EventLoop::TimerId& timer, std::chrono::nanoseconds delay) {
    if (timer != 0) context.loop().cancel_timer(timer);
    std::weak_ptr<State> weak = shared_from_this();
    timer = context.loop().add_timer(delay, 0ns, [weak, &timer] {
      if (auto state = weak.lock()) {
        timer = 0;
        state->drive();
      }
    });
  }

  void update_done() {
    bool credits_back = true;
    for (ns::ComputeIndex c = 0; c < computes.size(); ++c) {
      if (!computes[c].lost && node.available(c) != node.granted(c)) credits_back = false;
    }
    {
      std::lock_guard lock(queue_mutex);
      all_done = everything_sent() && queue.empty() && credits_back && retained.empty() && to_reassign.empty();
    }
    if (all_done) changed.notify_all();
  }

  bool push(ns::TimesliceIndex t, std::span<const std::byte> bytes, bool wait) {
    if (bytes.size() > options.max_contribution_bytes) {
      throw Error(
          Errc::message_too_large,
          fmt::format("scheduled push sender: a {}-byte contribution to time-slice {} (max_contribution_bytes {})",
                      bytes.size(), t, options.max_contribution_bytes));
    }
    auto message = encode_contribution(options.input, t, bytes);
    {
      std::unique_lock lock(queue_mutex);
      if (closed || finished)
        throw Error(Errc::closed, fmt::format("input {}: push after finish() or destruction", options.input));
      if (options.standby && !joined_from) {
        reject(fmt::format("input {} is on standby: push() only from its boundary, after join() and wait_joined()",
                           options.input));
      }
      if (t != next_push) reject(fmt::format("time-slice {}: pushed out of order, expected {}", t, next_push));
      if (queue.size() >= options.queue_capacity) {
        if (!wait) return false;
        if (context.loop().in_loop_thread()) {
          throw Error(Errc::would_block,
                      fmt::format("input {}: push() with a full queue on the event-loop thread; use try_push()",
                                  options.input));
        }
        // Back-pressure: the queue is full because no compute node takes more (credits out,
        // send buffers in flight); counted, so that a user sees how long the inputs waited.
        const auto waited_from = std::chrono::steady_clock::now();
        const bool room = changed.wait_for(lock, options.push_timeout,
                                           [&] { return closed || queue.size() < options.queue_capacity; });
        {
          std::lock_guard stats_lock(stats_mutex);
          ++stats.pushes_blocked;
          stats.push_blocked_ns += static_cast<std::uint64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - waited_from)
                  .count());
          if (!room) ++stats.push_timeouts;
        }
        if (!room) {
          throw Error(Errc::timeout,
                      fmt::format("input {}: no room for time-slice {} within the push timeout", options.input, t));
        }
        if (closed) throw Error(Errc::closed, fmt::format("input {}: the sender was destroyed", options.input));
      }
      queue.emplace(t, std::move(message));
      ++next_push;
    }
    {
      std::lock_guard lock(stats_mutex);
      ++stats.pushed;
    }
    post_drive();
    return true;
  }

  Context& context;
  TimesliceSenderOptions options;
  MetricsRegistry::Registration metrics;  // scheduled_push_metrics.hpp: removed first by the destructor
  ns::InputNode node;                     // loop thread only
  std::vector<Compute> computes;
  std::vector<Dde> ddes;
  std::map<ns::IntervalIndex, std::optional<ns::IntervalPlan>> plans;  // on_interval: started, not reported
  bool stopped = false;
  EventLoop::TimerId health_timer = 0;
  EventLoop::TimerId due_timer = 0;
  EventLoop::TimerId retry_timer = 0;

  std::mutex queue_mutex;  // guards what user threads share with the loop thread:
  std::condition_variable changed;
  std::map<ns::TimesliceIndex, std::vector<std::byte>> queue;  // encoded contributions, not yet sent
  // Sent and not yet credited back (built), by time-slice; loop thread only.
  std::map<ns::TimesliceIndex, Retained> retained;
  // Of lost nodes, not yet sent to the node that builds them instead; loop thread only.
  std::map<ns::TimesliceIndex, Retained> to_reassign;
  std::set<ns::ComputeIndex> joins_requested;     // standby slots whose request to join went on
  std::optional<ns::Time> assignment_wait_since;  // assignment by load: waiting for one since (loop thread)
  bool join_requested = false;                    // standby input: join() asked a compute node
  std::map<ns::InputIndex, ns::TimesliceIndex> inputs_joining;              // standby inputs' boundaries heard
  std::optional<ns::TimesliceIndex> joined_from;                            // standby input: its boundary (queue_mutex)
  std::map<std::size_t, std::deque<std::vector<std::byte>>> dde_joins_out;  // per DDE: joins not handed over yet
  ns::TimesliceIndex next_push = 0;
  bool finished = false;
  std::uint64_t passed_beyond_the_end = 0;  // beyond_the_end() time-slices passed; queue_mutex
  bool closed = false;
  bool all_done = false;  // finished, and everything sent and credited

  mutable std::mutex stats_mutex;
  TimesliceSenderStats stats;
};

TimesliceSender::TimesliceSender(Context& context, TimesliceSenderOptions options)
    : state_(std::make_shared<State>(context, std::move(options))) {
  context.loop().run_sync([this] { state_->start(); });
  state_->metrics = detail::add_sender_metrics(context, state_->options.input, [this] { return stats(); });
}

TimesliceSender::~TimesliceSender() {
  state_->metrics.reset();
  state_->context.loop().run_sync([this] { state_->stop(); });
}

void TimesliceSender::push(ns::TimesliceIndex t, std::span<const std::byte> bytes) {
  (void)state_->push(t, bytes, true);
}
bool TimesliceSender::try_push(ns::TimesliceIndex t, std::span<const std::byte> bytes) {
  return state_->push(t, bytes, false);
}

void TimesliceSender::finish() {
  {
    std::lock_guard lock(state_->queue_mutex);
    state_->finished = true;
  }
  state_->post_drive();
}

bool TimesliceSender::wait_finished(std::chrono::nanoseconds timeout) {
  if (state_->context.loop().in_loop_thread()) {
    throw Error(Errc::would_block, "wait_finished() on the event-loop thread");
  }
  std::unique_lock lock(state_->queue_mutex);
  return state_->changed.wait_for(lock, timeout, [&] { return state_->all_done; });
}

void TimesliceSender::join() {
  state_->context.loop().run_sync([&] { state_->request_join(); });
}

std::optional<ns::TimesliceIndex> TimesliceSender::wait_joined(std::chrono::nanoseconds timeout) {
  if (state_->context.loop().in_loop_thread()) {
    throw Error(Errc::would_block, "wait_joined() on the event-loop thread");
  }
  std::unique_lock lock(state_->queue_mutex);
  (void)state_->changed.wait_for(lock, timeout, [&] { return state_->joined_from.has_value() || state_->closed; });
  return state_->joined_from;
}

TimesliceSenderStats TimesliceSender::stats() const {
  std::lock_guard lock(state_->stats_mutex);
  return state_->stats;
}

}  // namespace netio::scheduled_push
