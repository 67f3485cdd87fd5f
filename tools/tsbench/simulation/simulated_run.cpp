#include "tsbench/simulation/simulated_run.hpp"

// The emulator's own delay draws and slow-down windows (pure parts of the emulated
// back-end), so that --delay and --slowdown mean the same in both runs.
#include "backends/emulated/delay_sampler.hpp"
#include "backends/emulated/slowdown_schedule.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/compute_node.hpp"
#include "netio/scheduler/control_messages.hpp"
#include "netio/scheduler/credits.hpp"
#include "netio/scheduler/deterministic_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <vector>

namespace netio::tools::tsbench::simulation {

namespace {

using ns::Duration;
using ns::Time;

[[noreturn]] void reject(const std::string& what) {
  throw Error(std::make_error_code(std::errc::invalid_argument), what);
}

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

double bytes_per_ns(const RateLimit& rate) { return rate.bytes_per_second / 1e9; }

Duration draw(emulated::DelaySampler& sampler) {
  if (!sampler.delays()) return Duration{0};
  return Duration{static_cast<Duration::rep>(std::llround(sampler.next_ns()))};
}

struct Event {
  Time at{0};
  std::uint64_t sequence = 0;
  std::function<void()> run;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.at != b.at ? a.at > b.at : a.sequence > b.sequence;
  }
};

class Simulator {
 public:
  Simulator(const BenchConfig& bench, ns::Mode mode, const SimulationOptions& options);
  SimulationResult run();

 private:
  struct Input {
    Input(const ns::SchedulerConfig& config, ns::InputIndex i, ns::Mode mode) : node(config, i, mode) {}
    ns::InputNode node;
    NodeClock clock;
    emulated::SlowdownSchedule slowdown;
    std::vector<emulated::DelaySampler> data_delay;  // per compute node (a connection each)
    std::vector<emulated::DelaySampler> control_delay;  // to the DDE (one connection)
    std::vector<Time> last_arrival;                  // per compute node: a connection keeps its order
    Time last_control_arrival{0};
    std::uint64_t due_generation = 0;  // the pattern's due timer: a newer one replaces it
    std::map<ns::IntervalIndex, std::optional<ns::IntervalPlan>> plans;  // started, not reported
    double out_capacity = FluidNetwork::kUnlimited;
    double transfer_cap = FluidNetwork::kUnlimited;
  };
  struct Held {
    Time first{0};
    Time last{0};
    std::uint64_t bytes = 0;
  };
  struct Compute {
    Compute(const ns::SchedulerConfig& config, ns::ComputeIndex c, std::uint32_t credits) : node(config, c, credits) {}
    ns::ComputeNode node;
    NodeClock clock;
    emulated::SlowdownSchedule slowdown;
    double in_capacity = FluidNetwork::kUnlimited;
    std::map<ns::TimesliceIndex, Held> held;
    std::uint64_t held_bytes = 0;
    std::uint64_t peak_held_bytes = 0;
    std::uint64_t handed_over = 0;
  };

  void at(Time when, std::function<void()> run) { queue_.push(Event{std::max(when, now_), sequence_++, std::move(run)}); }
  Duration sender_delay(emulated::DelaySampler& sampler, const emulated::SlowdownSchedule& slowdown) {
    return options_.base_latency + draw(sampler) + slowdown.extra_delay(now_);
  }

  void start();
  void apply_capacities();
  void network_changed();
  void on_network();
  // Input side, as TimesliceSender::State.
  void drive(ns::InputIndex i);
  void arm(ns::InputIndex i, Time due);
  void note_plan(Input& in, ns::TimesliceIndex t);
  void report(ns::InputIndex i, const ns::IntervalCompletion& done);
  void on_acknowledged(ns::InputIndex i, ns::TimesliceIndex t);
  void on_credit(ns::InputIndex i, ns::ComputeIndex c);
  void on_proposal(ns::InputIndex i, const ns::Proposal& proposal);
  void send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip);
  // Compute side, as TimesliceReceiver::State and DdeService::State.
  void on_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t, std::uint64_t bytes);
  void deliver(ns::ComputeIndex c);
  void on_report(const ns::IntervalCompletion& done);
  void send_proposals(const std::vector<ns::AddressedProposal>& proposals);
  void sample_fill();
  void end_of_duration();
  void check_done();
  std::uint64_t share_of(ns::ComputeIndex c, std::uint64_t count) const {
    const auto m = config_.compute_count;
    return count / m + (count % m > c ? 1 : 0);
  }

  BenchConfig bench_;
  ns::Mode mode_;
  SimulationOptions options_;
  ns::SchedulerConfig config_;
  std::uint32_t credits_;
  FluidNetwork network_;
  std::vector<Input> inputs_;
  std::vector<Compute> computes_;
  std::optional<ns::DeterministicEngine> dde_;  // on compute node 0 (DFS)
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::uint64_t sequence_ = 0;
  Time now_{0};
  std::uint64_t network_generation_ = 0;
  std::uint64_t limit_ = UINT64_MAX;  // inputs send the time-slices below it
  bool limit_set_ = false;
  bool done_ = false;
  std::string error_;
  RunRecords records_;
};

Simulator::Simulator(const BenchConfig& bench, ns::Mode mode, const SimulationOptions& options)
    : bench_(bench),
      mode_(mode),
      options_(options),
      config_(bench.scheduler_config()),
      credits_(ns::credits_per_input(bench.buffer_bytes, bench.inputs, bench.contribution_bytes)),
      network_(bench.inputs, bench.computes, options.sharing) {
  check_simulatable(bench_, options_);
  const auto base = bench_.node_emulation(0);
  // Clocks: one draw of offset and drift per node, from the spec's seed.
  emulated::Xoshiro256 clocks(base->seed ^ 0x636c6f636b73ULL);  // "clocks"
  auto draw_clock = [&] {
    NodeClock clock;
    clock.offset = Duration{static_cast<Duration::rep>(
        std::llround((2 * clocks.uniform_open() - 1) * static_cast<double>(options_.max_clock_offset.count())))};
    clock.drift = (2 * clocks.uniform_open() - 1) * options_.max_clock_drift;
    return clock;
  };
  // A port without its own figure gets the other one (identical network cards).
  auto line_rate = [](const EmulationConfig& e) { return e.node_in ? bytes_per_ns(e.node_in) : bytes_per_ns(e.node_out); };

  inputs_.reserve(bench_.inputs);
  for (ns::InputIndex i = 0; i < bench_.inputs; ++i) {
    const auto e = *bench_.node_emulation(i);
    Input& in = inputs_.emplace_back(config_, i, mode_);
    in.clock = draw_clock();
    in.slowdown = emulated::SlowdownSchedule(emulated::SlowdownSchedule::node_windows(e), Duration{0});
    for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) in.data_delay.emplace_back(e.delay, e.seed, c);
    in.control_delay.emplace_back(e.delay, e.seed, bench_.computes);
    in.last_arrival.assign(bench_.computes, Time{0});
    in.out_capacity = e.node_out ? bytes_per_ns(e.node_out) : line_rate(e);
    if (e.connection_rate) in.transfer_cap = bytes_per_ns(e.connection_rate);
  }
  computes_.reserve(bench_.computes);
  for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
    const auto e = *bench_.node_emulation(bench_.inputs + c);
    Compute& compute = computes_.emplace_back(config_, c, credits_);
    compute.clock = draw_clock();
    compute.slowdown = emulated::SlowdownSchedule(emulated::SlowdownSchedule::node_windows(e), Duration{0});
    compute.in_capacity = e.node_in ? bytes_per_ns(e.node_in) : line_rate(e);
  }
  if (mode_ == ns::Mode::dfs) dde_.emplace(config_);

  records_.buffer_bytes = bench_.buffer_bytes;
  records_.timeslices_per_interval = config_.timeslices_in_interval();
  records_.warmup_intervals = bench_.warmup_intervals;
}

void Simulator::start() {
  apply_capacities();
  if (bench_.timeslices) {
    limit_ = *bench_.timeslices;
    limit_set_ = true;
  } else {
    at(Time{bench_.duration}, [this] { end_of_duration(); });
  }
  for (ns::InputIndex i = 0; i < bench_.inputs; ++i) {
    auto& in = inputs_[i];
    // The hello on every data connection; the welcome comes back as a reply with the credits.
    for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
      const Time arrival = now_ + sender_delay(in.data_delay[c], in.slowdown);
      in.last_arrival[c] = arrival;
      at(arrival, [this, i, c] {
        at(now_ + options_.base_latency, [this, i, c] {
          inputs_[i].node.grant(c, credits_);
          drive(i);
        });
      });
    }
    if (dde_) {
      // The start handshake once the control connection is up.
      at(now_ + options_.base_latency, [this, i] { send_clock_probe(i, 0, std::nullopt); });
    }
  }
  at(Time{bench_.sample_period}, [this] { sample_fill(); });
}

void Simulator::apply_capacities() {
  std::optional<Time> next_change;
  auto consider = [&](const emulated::SlowdownSchedule& s) {
    if (const auto t = s.next_change_after(now_); t && (!next_change || *t < *next_change)) next_change = *t;
  };
  for (ns::InputIndex i = 0; i < bench_.inputs; ++i) {
    const auto& in = inputs_[i];
    const double factor = in.slowdown.rate_factor(now_);
    network_.set_out_capacity(i, in.out_capacity * factor, now_);
    network_.set_transfer_cap(i, in.transfer_cap * factor, now_);
    consider(in.slowdown);
  }
  for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
    const auto& compute = computes_[c];
    network_.set_in_capacity(c, compute.in_capacity * compute.slowdown.rate_factor(now_), now_);
    consider(compute.slowdown);
  }
  network_changed();
  if (next_change) at(*next_change, [this] { apply_capacities(); });
}

void Simulator::network_changed() {
  const auto generation = ++network_generation_;
  if (const auto finish = network_.next_finish()) {
    at(*finish, [this, generation] {
      if (generation == network_generation_) on_network();
    });
  }
}

void Simulator::on_network() {
  for (const Transfer& t : network_.advance(now_)) {
    auto& in = inputs_[t.input];
    Time arrival = now_ + sender_delay(in.data_delay[t.compute], in.slowdown);
    arrival = std::max(arrival, in.last_arrival[t.compute]);
    in.last_arrival[t.compute] = arrival;
    at(arrival, [this, t] { on_contribution(t.input, t.compute, t.tag, t.bytes); });
  }
  network_changed();
}

void Simulator::drive(ns::InputIndex i) {
  using What = ns::InputNode::Next::What;
  auto& in = inputs_[i];
  bool posted = false;
  for (;;) {
    const Time local = in.clock.local(now_);
    const auto next = in.node.next(local);
    if (next.what == What::wait_until) {
      arm(i, next.due);
      break;
    }
    if (next.what == What::skip) reject("simulation: a compute node was lost, which the model never does");
    if (next.what != What::send) break;   // a credit or an acknowledgement calls again
    if (next.timeslice >= limit_) break;  // not pushed: the run ends below it
    in.node.on_sent(next.timeslice, local);
    note_plan(in, next.timeslice);
    network_.post(i, next.compute, bench_.contribution_bytes, next.timeslice, now_);
    posted = true;
  }
  if (posted) network_changed();
}

void Simulator::arm(ns::InputIndex i, Time due) {
  auto& in = inputs_[i];
  const auto generation = ++in.due_generation;
  at(in.clock.true_time(due), [this, i, generation] {
    if (inputs_[i].due_generation == generation) drive(i);
  });
}

void Simulator::note_plan(Input& in, ns::TimesliceIndex t) {
  const auto* engine = in.node.engine();
  if (engine == nullptr) return;
  const auto j = engine->layout().interval_of(t);
  if (!in.plans.contains(j)) in.plans.emplace(j, engine->plan(j));
}

void Simulator::report(ns::InputIndex i, const ns::IntervalCompletion& done) {
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
  records_.intervals.push_back(r);
  if (!dde_) return;
  // The report and the request, one after the other on the control connection.
  Time arrival = now_ + sender_delay(in.control_delay.front(), in.slowdown);
  arrival = std::max(arrival, in.last_control_arrival);
  in.last_control_arrival = arrival;
  at(arrival, [this, done] { on_report(done); });
}

void Simulator::on_acknowledged(ns::InputIndex i, ns::TimesliceIndex t) {
  auto& in = inputs_[i];
  if (auto done = in.node.on_acknowledged(t, in.clock.local(now_))) report(i, *done);
  drive(i);
}

void Simulator::on_credit(ns::InputIndex i, ns::ComputeIndex c) {
  inputs_[i].node.on_credit(c);
  drive(i);
  check_done();
}

void Simulator::on_proposal(ns::InputIndex i, const ns::Proposal& proposal) {
  (void)inputs_[i].node.on_proposal(proposal);
  drive(i);
}

void Simulator::send_clock_probe(ns::InputIndex i, std::uint32_t sequence, std::optional<Duration> round_trip) {
  auto& in = inputs_[i];
  const ns::ClockProbe probe{i, sequence, in.clock.local(now_), round_trip};
  Time arrival = now_ + sender_delay(in.control_delay.front(), in.slowdown);
  arrival = std::max(arrival, in.last_control_arrival);
  in.last_control_arrival = arrival;
  at(arrival, [this, probe] {
    const auto echo = dde_->on_clock_probe(probe, computes_.front().clock.local(now_));
    at(now_ + options_.base_latency, [this, probe, echo] {
      if (echo.sequence == 0) {
        send_clock_probe(probe.input, 1, inputs_[probe.input].clock.local(now_) - echo.probe_sent_at);
      }
    });
  });
}

void Simulator::on_contribution(ns::InputIndex i, ns::ComputeIndex c, ns::TimesliceIndex t, std::uint64_t bytes) {
  auto& compute = computes_[c];
  const auto arrival = compute.node.on_contribution(i, t, compute.clock.local(now_));
  if (arrival != ns::ComputeNode::Arrival::accepted && arrival != ns::ComputeNode::Arrival::completes) {
    reject(fmt::format("simulation: compute node {} refused input {}'s contribution to time-slice {}", c, i, t));
  }
  auto& held = compute.held[t];
  if (held.bytes == 0) held.first = now_;
  held.last = now_;
  held.bytes += bytes;
  compute.held_bytes += bytes;
  compute.peak_held_bytes = std::max(compute.peak_held_bytes, compute.held_bytes);
  if (mode_ == ns::Mode::dfs) at(now_ + options_.base_latency, [this, i, t] { on_acknowledged(i, t); });
  deliver(c);
}

void Simulator::deliver(ns::ComputeIndex c) {
  auto& compute = computes_[c];
  while (const auto ready = compute.node.next_ready(compute.clock.local(now_), Duration{0})) {
    const auto t = ready->timeslice;
    const auto it = compute.held.find(t);
    TimesliceRecord r;
    r.timeslice = t;
    r.compute = c;
    r.complete = ready->complete;
    r.first_arrival = it->second.first;
    r.last_arrival = it->second.last;
    r.handed_over = now_;
    r.bytes = it->second.bytes;
    records_.timeslices.push_back(r);
    compute.held_bytes -= it->second.bytes;
    compute.held.erase(it);
    ++compute.handed_over;
    for (const ns::InputIndex i : compute.node.release(t)) {
      at(now_ + options_.base_latency, [this, i, c] { on_credit(i, c); });
    }
  }
  check_done();
}

void Simulator::on_report(const ns::IntervalCompletion& done) {
  const Time local = computes_.front().clock.local(now_);
  send_proposals(dde_->on_report(done.report, local));
  send_proposals(dde_->on_request(done.request));
}

void Simulator::send_proposals(const std::vector<ns::AddressedProposal>& proposals) {
  for (const auto& [input, proposal] : proposals) {
    at(now_ + options_.base_latency, [this, i = input, p = proposal] { on_proposal(i, p); });
  }
}

void Simulator::sample_fill() {
  if (done_) return;
  for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
    records_.fill.push_back(FillSample{now_, c,
                                       100.0 * static_cast<double>(computes_[c].held_bytes) /
                                           static_cast<double>(bench_.buffer_bytes)});
  }
  at(now_ + bench_.sample_period, [this] { sample_fill(); });
}

void Simulator::end_of_duration() {
  // As the socket run: the furthest any input has come, rounded up to a whole interval, plus one.
  std::uint64_t furthest = 0;
  for (const auto& in : inputs_) furthest = std::max(furthest, in.node.sent_count());
  const auto interval = config_.timeslices_in_interval();
  limit_ = (furthest / interval + 2) * interval;
  limit_set_ = true;
  check_done();
}

void Simulator::check_done() {
  // As the socket run ends: every time-slice handed over, and every input holds all its
  // credits again (so it has every acknowledgement, and reported its last interval).
  if (!limit_set_ || done_) return;
  for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
    if (computes_[c].handed_over < share_of(c, limit_)) return;
  }
  for (const auto& in : inputs_) {
    for (ns::ComputeIndex c = 0; c < bench_.computes; ++c) {
      if (in.node.available(c) != in.node.granted(c)) return;
    }
  }
  done_ = true;
}

SimulationResult Simulator::run() {
  SimulationResult result;
  try {
    start();
    while (!done_ && !queue_.empty()) {
      Event event = queue_.top();
      queue_.pop();
      if (event.at > Time{options_.time_limit}) {
        result.error = fmt::format("the simulation did not finish within {} s of model time",
                                   std::chrono::duration_cast<std::chrono::seconds>(options_.time_limit).count());
        break;
      }
      now_ = event.at;
      event.run();
      ++result.events;
      if (result.events % 4096 == 0 && options_.should_stop && options_.should_stop()) {
        result.interrupted = true;
        break;
      }
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (!done_ && result.error.empty() && !result.interrupted) {
    std::uint64_t handed_over = 0;
    for (const auto& c : computes_) handed_over += c.handed_over;
    result.error = fmt::format("the simulation stalled at {:.3f} s: {} of {} time-slices handed over",
                               static_cast<double>(now_.count()) / 1e9, handed_over, limit_);
  }
  result.end = now_;
  for (const auto& c : computes_) {
    records_.peak_fill_percent = std::max(
        records_.peak_fill_percent, 100.0 * static_cast<double>(c.peak_held_bytes) / static_cast<double>(bench_.buffer_bytes));
  }
  std::sort(records_.timeslices.begin(), records_.timeslices.end(),
            [](const auto& a, const auto& b) { return a.timeslice < b.timeslice; });
  std::stable_sort(records_.intervals.begin(), records_.intervals.end(), [](const auto& a, const auto& b) {
    return a.input != b.input ? a.input < b.input : a.interval < b.interval;
  });
  result.records = std::move(records_);
  return result;
}

}  // namespace

void check_simulatable(const BenchConfig& bench, const SimulationOptions& options) {
  ns::validate(bench.scheduler_config());
  const auto base = bench.node_emulation(0);
  if (!base) reject("--simulate needs a network to model: --emulate with in= or out= (it is 'none')");
  if (!base->node_in && !base->node_out) {
    reject(fmt::format("--simulate needs a port capacity: in= or out= in --emulate '{}'", bench.emulate));
  }
  if (options.max_clock_drift < 0 || options.max_clock_drift > 0.01) {
    reject("the simulated clock drift must be within [0, 1 %] (0 .. 10000 ppm)");
  }
  if (options.max_clock_offset < Duration{0}) reject("the simulated clock offset must not be negative");
}

SimulationResult simulate(const BenchConfig& bench, ns::Mode mode, const SimulationOptions& options) {
  Simulator simulator(bench, mode, options);
  return simulator.run();
}

}  // namespace netio::tools::tsbench::simulation
