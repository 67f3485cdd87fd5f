// SPDX-License-Identifier: MIT
#include "scheduled_push_metrics.hpp"

#include "netio/context.hpp"

#include <chrono>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace netio::scheduled_push::detail {
namespace {

// Appends samples with the same labels: one line per field of a stats struct.
struct Samples {
  std::vector<Metric>& out;
  std::vector<std::pair<std::string, std::string>> labels;
  void counter(const char* name, const char* help, std::uint64_t value) {
    out.push_back({name, MetricType::counter, help, labels, double(value)});
  }
  void gauge(const char* name, const char* help, std::uint64_t value) {
    out.push_back({name, MetricType::gauge, help, labels, double(value)});
  }
  // A time spent in all, as a counter in seconds (name ending in _seconds_total).
  void seconds_total(const char* name, const char* help, std::chrono::nanoseconds total) {
    out.push_back({name, MetricType::counter, help, labels, std::chrono::duration<double>(total).count()});
  }
  // A duration as a summary in seconds: <name>_sum (the total) and <name>_count (how many).
  void summary(const std::string& name, const char* help, std::chrono::nanoseconds sum, std::uint64_t count) {
    out.push_back({name + "_sum", MetricType::summary, help, labels, std::chrono::duration<double>(sum).count()});
    out.push_back({name + "_count", MetricType::summary, help, labels, double(count)});
  }
  // One series per compute node, labelled compute=C (node= is netio_tsbench's rank of the process).
  void per_compute(const char* name, const char* help, const std::vector<std::uint32_t>& values) {
    for (std::size_t c = 0; c < values.size(); ++c) {
      auto with_compute = labels;
      with_compute.emplace_back("compute", std::to_string(c));
      out.push_back({name, MetricType::gauge, help, std::move(with_compute), double(values[c])});
    }
  }
  // A state set: one series per state, 1 for the current one (Prometheus' enum idiom).
  void state(const char* name, const char* help, const char* label, std::initializer_list<std::string_view> states,
             std::string_view current) {
    for (const std::string_view state : states) {
      auto with_state = labels;
      with_state.emplace_back(label, std::string(state));
      out.push_back({name, MetricType::gauge, help, std::move(with_state), state == current ? 1.0 : 0.0});
    }
  }
};

}  // namespace

MetricsRegistry::Registration add_sender_metrics(Context& context, std::uint32_t input,
                                                 std::function<TimesliceSenderStats()> stats) {
  return context.metrics().add([input = std::to_string(input), stats = std::move(stats)](std::vector<Metric>& out) {
    const TimesliceSenderStats s = stats();
    Samples add{out, {{"socket", "timeslice_sender"}, {"input", input}}};
    add.counter("netio_timeslice_sender_pushed_total", "Contributions pushed by the application", s.pushed);
    add.counter("netio_timeslice_sender_sent_total", "Contributions sent to their compute node", s.sent);
    add.counter("netio_timeslice_sender_undeliverable_total", "Contributions never sent: every compute node was lost",
                s.undeliverable);
    add.counter("netio_timeslice_sender_reassigned_total",
                "Contributions sent to another compute node because theirs was lost", s.reassigned);
    add.counter("netio_timeslice_sender_credits_returned_total", "Credits compute nodes returned", s.credits_returned);
    add.counter("netio_timeslice_sender_incomplete_credits_total", "Credits of time-slices a compute node gave up on",
                s.incomplete_credits);
    add.counter("netio_timeslice_sender_reports_sent_total", "DFS interval reports handed to DDE connections",
                s.reports_sent);
    add.counter("netio_timeslice_sender_reports_missed_total", "DFS reports a DDE missed", s.reports_missed);
    add.counter("netio_timeslice_sender_proposals_taken_total", "DFS proposals this input followed", s.proposals_taken);
    add.counter("netio_timeslice_sender_assignments_taken_total",
                "Assignment by load: interval assignments this input took", s.assignments_taken);
    add.seconds_total("netio_timeslice_sender_assignment_wait_seconds_total",
                      "Assignment by load: time this input waited for its interval's assignment",
                      std::chrono::nanoseconds(s.assignment_wait_ns));
    add.gauge("netio_timeslice_sender_computes_lost", "Compute nodes lost", s.computes_lost);
    add.gauge("netio_timeslice_sender_ddes_lost", "DDE replicas lost", s.ddes_lost);
    add.gauge("netio_timeslice_sender_computes_draining", "Compute nodes that announced a drain", s.computes_draining);
    add.gauge("netio_timeslice_sender_computes_drained", "Compute nodes that drained and left", s.computes_drained);
    add.gauge("netio_timeslice_sender_computes_joined", "Standby compute slots that joined", s.computes_joined);
    add.counter("netio_timeslice_sender_unbuilt_total", "Contributions sent that no compute node is left to build",
                s.unbuilt);
    add.gauge("netio_timeslice_sender_retained", "Contributions sent and kept until their credit comes back",
              s.retained);
    add.gauge("netio_timeslice_sender_peak_retained", "The most contributions retained at once", s.peak_retained);
    add.counter("netio_timeslice_sender_pushes_blocked_total", "push() calls that waited for room in the queue",
                s.pushes_blocked);
    add.seconds_total("netio_timeslice_sender_push_blocked_seconds_total", "Time push() calls waited for room",
                      std::chrono::nanoseconds(s.push_blocked_ns));
    add.counter("netio_timeslice_sender_push_timeouts_total", "push() calls that gave up after push_timeout",
                s.push_timeouts);
    add.summary("netio_timeslice_sender_lateness_seconds",
                "DFS: how late paced contributions went after their due time", s.paced_lateness, s.paced_sent);
  });
}

MetricsRegistry::Registration add_receiver_metrics(Context& context, std::string endpoint,
                                                   std::function<TimesliceReceiverStats()> stats) {
  return context.metrics().add([endpoint = std::move(endpoint), stats = std::move(stats)](std::vector<Metric>& out) {
    const TimesliceReceiverStats s = stats();
    Samples add{out, {{"socket", "timeslice_receiver"}, {"endpoint", endpoint}}};
    add.counter("netio_timeslice_receiver_complete_total", "Time-slices complete and handed over", s.complete);
    add.counter("netio_timeslice_receiver_incomplete_total", "Time-slices given up on as incomplete", s.incomplete);
    add.counter("netio_timeslice_receiver_contributions_total", "Contributions received", s.contributions);
    add.gauge("netio_timeslice_receiver_held_bytes", "Contribution bytes held now (the buffer's fill)", s.held_bytes);
    add.gauge("netio_timeslice_receiver_peak_held_bytes", "The most contribution bytes ever held at once",
              s.peak_held_bytes);
    add.gauge("netio_timeslice_receiver_kept", "Time-slices kept by the application and not released", s.kept);
    add.counter("netio_timeslice_receiver_dropped_total", "Contributions refused (misbehaving inputs)", s.dropped);
    add.counter("netio_timeslice_receiver_kept_stalls_total", "Stalls on kept time-slices past kept_stall_warning",
                s.kept_stalls);
    add.counter("netio_timeslice_receiver_reassigned_built_total",
                "Time-slices of a lost compute node built here (delivered again)", s.reassigned_built);
    add.counter("netio_timeslice_receiver_built_elsewhere_total",
                "Reassigned time-slices freed here: the lost node had built them", s.built_elsewhere);
    add.gauge("netio_timeslice_receiver_computes_lost_heard", "Lost compute nodes inputs told this node of",
              s.computes_lost_heard);
    add.gauge("netio_timeslice_receiver_inputs_connected", "Inputs welcomed and still connected", s.inputs_connected);
    add.gauge("netio_timeslice_receiver_inputs_gone", "Inputs welcomed whose connection closed since", s.inputs_gone);
  });
}

MetricsRegistry::Registration add_dde_metrics(Context& context, std::string endpoint,
                                              std::function<DdeServiceStats()> stats) {
  return context.metrics().add([endpoint = std::move(endpoint), stats = std::move(stats)](std::vector<Metric>& out) {
    const DdeServiceStats s = stats();
    Samples add{out, {{"socket", "dde"}, {"endpoint", endpoint}}};
    add.counter("netio_dde_reports_total", "Interval reports received from inputs", s.reports);
    add.counter("netio_dde_requests_total", "Proposal requests received", s.requests);
    add.counter("netio_dde_proposals_sent_total", "Proposals sent to inputs", s.proposals_sent);
    add.counter("netio_dde_proposals_dropped_total", "Proposals dropped: the input's window was full or it was gone",
                s.proposals_dropped);
    add.counter("netio_dde_bad_messages_total", "Malformed control messages", s.bad_messages);
    add.counter("netio_dde_clock_probes_total", "Start handshake clock probes answered", s.clock_probes);
    add.counter("netio_dde_clock_samples_total", "Interval-start clock samples taken", s.clock_samples);
    add.counter("netio_dde_fallbacks_total", "Times pacing lost and the DDE switched to best-effort", s.fallbacks);
    add.counter("netio_dde_fallbacks_on_spread_total",
                "Of those, switches because best-effort's spread was far under pacing's floor", s.fallbacks_on_spread);
    add.counter("netio_dde_best_effort_intervals_total", "Intervals proposed best-effort", s.best_effort_intervals);
    add.gauge("netio_dde_fallback_active", "1 while the safety net runs the intervals best-effort", s.fallback_active);
    add.counter("netio_dde_load_reports_total", "Assignment by load: the inputs' load reports taken", s.load_reports);
    add.counter("netio_dde_assignments_sent_total", "Assignment by load: interval assignments sent to inputs",
                s.assignments_sent);
    add.counter("netio_dde_assignments_dropped_total",
                "Assignment by load: interval assignments dropped (reply window full, input gone)",
                s.assignments_dropped);
    add.state("netio_dde_assignment_mode", "How time-slices are assigned to compute nodes (1: the mode in force)",
              "mode", {"fixed", "load"}, scheduler::to_string(s.assignment));
    add.gauge("netio_dde_assignment_interval", "The latest interval whose assignment was decided", s.assigned_interval);
    add.gauge("netio_dde_computes_reported_lost", "Compute nodes some input reported lost",
              s.computes_reported_lost.size());
    add.per_compute("netio_dde_assignment_share", "Time-slices per interval a compute node builds (latest decision)",
                    s.assigned_shares);
  });
}

}  // namespace netio::scheduled_push::detail
