// SPDX-License-Identifier: MIT
#include "netio/scheduled_push/dde_service.hpp"

#include "scheduled_push_metrics.hpp"

#include "netio/context.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/scheduled_push/wire.hpp"
#include "netio/scheduler/assigner.hpp"
#include "netio/scheduler/assignment_messages.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/deterministic_engine.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace netio::scheduled_push {

namespace ns = netio::scheduler;

struct DdeService::State {
  State(const ns::SchedulerConfig& config, ProposalObserver observer, const std::vector<ns::InputIndex>& standby)
      : engine(config, standby),
        input_count(config.input_count),
        on_proposal(std::move(observer)),
        standby_inputs(standby) {
    if (config.assignment == ns::Assignment::load) assigner.emplace(config, standby);
    stats.assignment = config.assignment;
    stats.assigned_shares = ns::fixed_assignment(config, 0).shares;  // until the first decision by load
  }

  void on_message(std::span<const std::byte> bytes, const Peer& peer) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    std::vector<ns::AddressedProposal> proposals;
    try {
      if (ns::control_message_type(bytes) == ns::load_report_type) {
        on_load_report(ns::decode_load_report(bytes), peer);
        return;
      }
      if (ns::control_message_type(bytes) == static_cast<std::uint8_t>(WireType::input_join)) {
        on_input_join(decode_input_join(bytes), peer);
        return;
      }
      switch (ns::message_type(bytes)) {
        case ns::MessageType::metadata_report: {
          const auto report = ns::decode_metadata_report(bytes);
          check_input(report.input);
          proposals = engine.on_report(report, now);
          count(&DdeServiceStats::reports);
          break;
        }
        case ns::MessageType::proposal_request: {
          const auto request = ns::decode_proposal_request(bytes);
          check_input(request.input);
          peers[request.input] = peer;
          proposals = engine.on_request(request);
          count(&DdeServiceStats::requests);
          break;
        }
        case ns::MessageType::clock_probe: {
          const auto probe = ns::decode_clock_probe(bytes);
          if (probe.sample) {  // an interval's start (extension 9): nothing to answer
            engine.on_clock_sample(probe, now);
            count(&DdeServiceStats::clock_samples);
            return;
          }
          const auto echo = engine.on_clock_probe(probe, now);
          count(&DdeServiceStats::clock_probes);
          if (assigner && standby(probe.input) && !peers.contains(probe.input)) register_standby(probe.input, peer);
          try {
            (void)peer.try_reply(ns::encode(echo));  // a probe whose echo does not fit is simply not answered
          } catch (const Error&) {
          }
          return;
        }
        case ns::MessageType::proposal:
        case ns::MessageType::clock_echo:
          throw Error(Errc::protocol_error, "a proposal or clock echo, which only DDEs send");
      }
    } catch (const Error& e) {
      count(&DdeServiceStats::bad_messages);
      if (complained.insert(peer.connection()).second) {
        log(LogLevel::warn, "DDE at {}: dropped a control message from {}: {}", local_endpoint(), peer.to_string(),
            e.what());
      }
      return;
    }
    for (const auto& [input, proposal] : proposals) send(input, proposal);
    const auto& fallback = engine.fallback().stats();
    std::lock_guard lock(stats_mutex);
    stats.fallbacks = fallback.engaged;
    stats.fallbacks_on_spread = fallback.engaged_on_spread;
    stats.best_effort_intervals = fallback.best_effort_intervals;
    stats.fallback_active = fallback.active;
  }

  // Assignment by load: the coordinator's part. The report's connection is where the input's
  // assignments go (as its proposals); every decision goes to every input. One that does not
  // fit the input's reply window now is kept and sent again with its next report: an input
  // sends into an interval only once it holds its assignment, and after a failover this
  // replica may be the only one left to send it.
  void on_load_report(const ns::LoadReport& report, const Peer& peer) {
    if (!assigner) throw Error(Errc::protocol_error, "a load report, but this DDE's assignment is fixed");
    check_input(report.input);
    peers[report.input] = peer;
    count(&DdeServiceStats::load_reports);
    note_lost(report);
    send_unsent_assignments(report.input);
    pass_join_requests(report);
    for (const auto& assignment : assigner->on_report(report)) {
      {
        std::lock_guard lock(stats_mutex);
        stats.assigned_interval = assignment.interval;
        stats.assigned_shares = assignment.shares;
      }
      for (const auto& change : assignment.changes) {
        log(LogLevel::info, "DDE at {}: compute node {} {} from time-slice {} (interval {})", local_endpoint(),
            change.compute, change.joins ? "joins" : "leaves", change.from, assignment.interval);
      }
      for (const auto& join : assignment.input_joins) {
        log(LogLevel::info, "DDE at {}: input {} joins from time-slice {} (interval {})", local_endpoint(), join.input,
            join.from, assignment.interval);
        join_requests.erase(join.input);
      }
      const auto bytes = ns::encode(assignment);
      for (auto it = peers.begin(); it != peers.end();) {
        // What waits for this input goes first (a standby input sends no report that would
        // take it: it waits for the decision naming its join).
        send_unsent_assignments(it->first);
        auto& unsent = unsent_assignments[it->first];
        bool sent = false;
        try {
          sent = unsent.empty() && it->second.try_reply(bytes);
        } catch (const Error&) {
          unsent.clear();
          it = peers.erase(it);  // that input's connection is gone; its next message brings the new one
          count(&DdeServiceStats::assignments_dropped);
          continue;
        }
        if (sent) {
          count(&DdeServiceStats::assignments_sent);
        } else {
          unsent.push_back(bytes);
          if (unsent.size() > max_unsent_assignments) {  // an input this far behind is not reading: dropped
            unsent.pop_front();
            count(&DdeServiceStats::assignments_dropped);
          }
        }
        ++it;
      }
    }
  }

  // A standby input's boundary T (an interval start), passed on by an input ahead of its
  // reports of T's interval and later: the history counts the joiner from that interval on.
  // Under load, {x, 0} from x itself is its request to join (request_join()).
  void on_input_join(const InputJoin& join, const Peer& peer) {
    check_input(join.input);
    if (join.from == 0 && assigner) {
      request_join(join.input, peer);
      return;
    }
    const auto n = layout_n;
    if (join.from == 0 || join.from % n != 0) {
      throw Error(Errc::protocol_error, "input " + std::to_string(join.input) + " joins from time-slice " +
                                            std::to_string(join.from) + ", not an interval start");
    }
    if (!engine.on_input_joins(join.input, join.from / n)) return;
    log(LogLevel::info, "DDE at {}: input {} reports from interval {} on", local_endpoint(), join.input, join.from / n);
    count(&DdeServiceStats::inputs_joined);
  }

  bool standby(ns::InputIndex i) const {
    return std::find(standby_inputs.begin(), standby_inputs.end(), i) != standby_inputs.end();
  }

  // Assignment by load, standby input x: the decisions go to it as to every input (it applies
  // their compute membership changes while it waits, and starts with the one naming its join),
  // from its first message on (its clock probe, or its request), the ones held first.
  void register_standby(ns::InputIndex x, const Peer& peer) {
    peers[x] = peer;
    auto& unsent = unsent_assignments[x];
    unsent.clear();
    for (const auto& held : assigner->decided_from(ns::assignment_distance)) unsent.push_back(ns::encode(held));
    while (unsent.size() > max_unsent_assignments) unsent.pop_front();
    send_unsent_assignments(x);
  }

  // Standby input x asks to join. Not decided here: replicas would see the request at different
  // points of the report stream. It goes on to every member input, which flag it in their load
  // reports (LoadReport::joining_inputs); any report flagging it makes the Assigner name x's
  // boundary, the same on every replica (docs/design/assignment.md).
  void request_join(ns::InputIndex x, const Peer& peer) {
    if (!standby(x)) throw Error(Errc::protocol_error, "input " + std::to_string(x) + " asks to join, not on standby");
    if (!peers.contains(x)) register_standby(x, peer);
    if (assigner->inputs().joins_from(x)) return;  // named: x got (or gets) the decision
    if (!join_requests.insert(x).second) return;
    log(LogLevel::info, "DDE at {}: input {} asks to join; passed on to the inputs", local_endpoint(), x);
    const auto bytes = encode(InputJoin{x, 0});
    for (const auto& [i, input_peer] : peers) {
      if (i == x) continue;
      try {
        (void)input_peer.try_reply(bytes);  // one not taken now goes with the input's next report
      } catch (const Error&) {
      }
    }
  }

  // The requests to join not decided yet go to an input with each of its reports that does not
  // flag them yet (one input's flag is enough, but any input's report may be the one).
  void pass_join_requests(const ns::LoadReport& report) {
    for (const auto x : join_requests) {
      if (x == report.input ||
          std::find(report.joining_inputs.begin(), report.joining_inputs.end(), x) != report.joining_inputs.end()) {
        continue;
      }
      try {
        (void)peers.at(report.input).try_reply(encode(InputJoin{x, 0}));
      } catch (const Error&) {
      }
    }
  }

  void send_unsent_assignments(ns::InputIndex input) {
    auto& unsent = unsent_assignments[input];
    const auto peer = peers.find(input);
    while (!unsent.empty() && peer != peers.end()) {
      bool sent = false;
      try {
        sent = peer->second.try_reply(unsent.front());
      } catch (const Error&) {
        return;  // gone: the caller's next reply finds it so
      }
      if (!sent) return;
      unsent.pop_front();
      count(&DdeServiceStats::assignments_sent);
    }
  }

  void check_input(ns::InputIndex i) const {
    if (i >= input_count) {
      throw Error(Errc::invalid_option,
                  "input " + std::to_string(i) + " out of range (" + std::to_string(input_count) + " inputs)");
    }
  }

  void send(ns::InputIndex input, const ns::Proposal& proposal) {
    const auto it = peers.find(input);
    bool sent = false;
    if (it != peers.end()) {
      try {
        sent = it->second.try_reply(ns::encode(proposal));
      } catch (const Error&) {
        peers.erase(it);  // that input's connection is gone; a new request brings the new one
      }
    }
    count(sent ? &DdeServiceStats::proposals_sent : &DdeServiceStats::proposals_dropped);
    if (sent && on_proposal) on_proposal(input, proposal);
  }

  // Written by the constructing thread once the socket is bound, read by the loop thread.
  std::string local_endpoint() const {
    std::lock_guard lock(stats_mutex);
    return endpoint.to_string();
  }

  // The compute nodes an input reported lost (LoadReport::in_use = lost_compute), for the stats.
  void note_lost(const ns::LoadReport& report) {
    std::lock_guard lock(stats_mutex);
    auto& lost = stats.computes_reported_lost;
    for (ns::ComputeIndex c = 0; c < report.in_use.size(); ++c) {
      if (report.in_use[c] == ns::lost_compute && std::find(lost.begin(), lost.end(), c) == lost.end())
        lost.push_back(c);
    }
  }

  void count(std::uint64_t DdeServiceStats::*field) {
    std::lock_guard lock(stats_mutex);
    ++(stats.*field);
  }

  ns::DeterministicEngine engine;
  std::optional<ns::Assigner> assigner;  // assignment by load
  std::uint32_t input_count;
  std::uint64_t layout_n = 1;  // time-slices per interval
  ProposalObserver on_proposal;
  Endpoint endpoint;
  std::map<ns::InputIndex, Peer> peers;  // where each input's proposals go
  std::vector<ns::InputIndex> standby_inputs;
  std::set<ns::InputIndex> join_requests;  // assignment by load: standby inputs that asked, not named yet
  // Assignment by load: per input, the encoded assignments its reply window did not take yet.
  static constexpr std::size_t max_unsent_assignments = 16;
  std::map<ns::InputIndex, std::deque<std::vector<std::byte>>> unsent_assignments;
  std::set<ConnectionId> complained;
  mutable std::mutex stats_mutex;
  DdeServiceStats stats;
  MetricsRegistry::Registration metrics;            // scheduled_push_metrics.hpp: removed first by the destructor
  std::unique_ptr<LowLatencyReceiveSocket> socket;  // last: destroyed first
};

DdeService::DdeService(Context& context, const Endpoint& local, const ns::SchedulerConfig& config,
                       ProposalObserver on_proposal, AdmissionOptions admission,
                       const std::vector<ns::InputIndex>& standby_inputs)
    : state_(std::make_shared<State>(config, std::move(on_proposal), standby_inputs)) {
  state_->layout_n = config.timeslices_in_interval();
  LowLatencyReceiveOptions options;
  // The largest DFS control message is 48 bytes; a load report names every compute node.
  options.max_message_size =
      std::max<std::size_t>(256, ns::encoded_size_of_load_report(config.compute_count, config.input_count));
  options.admission = std::move(admission);
  State* state = state_.get();  // the socket, owned by the state, dies before it
  state_->socket = std::make_unique<LowLatencyReceiveSocket>(
      context, local, [state](std::span<const std::byte> bytes, const Peer& peer) { state->on_message(bytes, peer); },
      options);
  const auto bound = state_->socket->local_endpoint();
  {
    std::lock_guard lock(state_->stats_mutex);
    state_->endpoint = bound;
  }
  state_->metrics = detail::add_dde_metrics(context, bound.to_string(), [this] { return stats(); });
}

DdeService::~DdeService() {
  state_->metrics.reset();
  state_->socket.reset();
}

Endpoint DdeService::local_endpoint() const {
  std::lock_guard lock(state_->stats_mutex);
  return state_->endpoint;
}

DdeServiceStats DdeService::stats() const {
  std::lock_guard lock(state_->stats_mutex);
  return state_->stats;
}

}  // namespace netio::scheduled_push
