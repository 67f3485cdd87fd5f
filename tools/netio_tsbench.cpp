// SPDX-License-Identifier: MIT
// netio_tsbench: the time-slice building benchmark of the scheduled-push pattern: N inputs
// scatter contributions to M compute nodes, best-effort or under the DFS, on an emulated
// network; reports the completion spread of every time-slice, the aggregate bandwidth and the
// receive-buffer fill. Options, JSON keys and exit status: docs/man/netio_tsbench.1.md
// (man netio_tsbench).
//
//   netio_tsbench --inputs N --computes M [--scheduler best-effort|dfs | --compare] [--emulate SPEC]
//                 [--csv DIR] [--json] ...                                  (every node in this process)
//   netio_tsbench --role input|compute --rank K --config FILE --timeslices COUNT ...  (one node per process)
//   netio_tsbench --simulate --inputs N --computes M ...   (the same engines in a discrete-event network model)
#include "tsbench/bench_config.hpp"
#include "tsbench/cluster_config.hpp"
#include "tsbench/collect.hpp"
#include "tsbench/local_run.hpp"
#include "tsbench/report.hpp"
#include "tsbench/role_run.hpp"
#include "tsbench/simulated_run.hpp"

#include "common/cli_options.hpp"
#include "common/cpu_affinity.hpp"
#include "common/deadline.hpp"
#include "common/metrics_option.hpp"
#include "common/termination.hpp"
#include "common/tool_main.hpp"
#include "common/units.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/credits.hpp"
#include "netio/scheduler/simulation/lossless_fat_tree.hpp"

#ifdef NETIO_TSBENCH_FAT_TREE
#include <fat_tree_network.hpp>  // --network fat-tree (scheduler/simulation/fabric, with ns-3)
#endif

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

using namespace netio::tools;
using namespace netio::tools::tsbench;
namespace ns = netio::scheduler;
constexpr const char* tool_name = "netio_tsbench";

struct Options {
  BenchConfig bench;
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(120);  // role mode: for the other nodes
  std::string scheduler = "dfs";
  bool compare = false;
  std::string csv;
  bool json = false;
  std::string role;
  std::optional<std::uint32_t> rank;
  std::string config;
  std::string collect;
  std::optional<netio::EmulationConfig> emulate;
  MetricsOptions metrics;
  std::chrono::nanoseconds timeout{0};
  CpuChoice cpu;
  bool simulate = false;
  std::string port_sharing = "fair";
  std::string network = "ports";
  std::string core;
  std::chrono::nanoseconds clock_offset = std::chrono::milliseconds(1);
  std::string timer_late;
  std::string port_late;
  bool control_lane = false;
  double clock_drift_ppm = 20;
  // --network fat-tree (built with ns-3: NETIO_TSBENCH_FAT_TREE) and fat-tree-lossless
  std::size_t leaf_size = 16;
  std::size_t oversubscription = 1;
  std::uint64_t switch_buffer = 128 * 1024;
  std::uint64_t mtu = 0;  // 0: 9000 on the Ethernet fat-tree, 4096 (InfiniBand's) on the lossless one
  std::chrono::nanoseconds tcp_min_rto = std::chrono::milliseconds(200);
  bool adaptive_routing = false;
};

void add_options(CLI::App& app, Options& o) {
  auto& b = o.bench;
  app.add_option("--inputs", b.inputs, "Input nodes N (local run)")->capture_default_str();
  app.add_option("--computes", b.computes, "Compute nodes M (local run)")->capture_default_str();
  auto* scheduler = app.add_option("--scheduler", o.scheduler, "best-effort (FLESnet's credits only) or dfs")
                        ->check(CLI::IsMember({"best-effort", "dfs"}))
                        ->capture_default_str();
  app.add_flag("--compare", o.compare,
               "Run best-effort, then DFS, on the same configuration; print both and the ratios")
      ->excludes(scheduler);
  add_size_option(app, "--contribution-size", b.contribution_bytes, "Bytes of every contribution");
  app.add_option_function<std::uint32_t>(
         "--credits", [&b](std::uint32_t n) { b.credits = n; },
         "Credits per input-compute pair (contributions an input may have at a compute node); the receive buffer of "
         "every compute node is then credits x N x contribution-size. At least 2")
      ->default_str(std::to_string(ns::default_credits_per_input));
  add_size_option(app, "--buffer-size", b.buffer_bytes,
                  "Receive buffer of every compute node instead of --credits; each input then gets buffer / N / "
                  "contribution-size credits (at least 2)")
      ->default_str("");
  app.add_option_function<std::uint64_t>(
         "--interval",
         [&b](std::uint64_t n) {
           b.interval_timeslices = n;
           b.interval_given = true;
         },
         "Time-slices per DFS interval, a multiple of M (whole rounds); default 1000 rounded down to whole rounds")
      ->type_name("UINT");
  app.add_option("--history", b.history_length,
                 "hist_cnt: complete intervals the DDE looks back on (the paper's duration rule, the clock drift)")
      ->capture_default_str();
  add_choice_option(
      app, "--duration-rule", b.duration_rule,
      {{"tracking", ns::DurationRule::tracking}, {"paper", ns::DurationRule::paper}},
      "How the DDE proposes durations: tracking (ours: steps down after intervals that kept up, follows "
      "the last 3 otherwise; proposes from the 5th interval on) or paper (the median of hist_cnt and Eq. 1's "
      "staged speed-up)");
  add_choice_option(app, "--clock-rule", b.clock_rule,
                    {{"filtered", ns::ClockRule::filtered}, {"paper", ns::ClockRule::paper}},
                    "How the DDE estimates each input's clock offset: filtered (ours: the least-queued of the last 8 "
                    "reports) or paper (every report's own, less half the input's acknowledgement time)");
  add_choice_option(app, "--fallback", b.fallback, {{"on", true}, {"off", false}},
                    "DFS's safety net: on (ours: the DDE runs intervals best-effort for a while when paced ones take "
                    "longer than best-effort ones, and counts it) or off (the paper's DDE)");
  add_choice_option(app, "--assignment", b.assignment,
                    {{"load", ns::Assignment::load}, {"fixed", ns::Assignment::fixed}},
                    "Which compute node builds a time-slice: fixed (t mod M) or load (the coordinator, a DDE replica, "
                    "shares each interval out by the room the inputs find in the compute nodes' buffers: a slow "
                    "or full node gets fewer, a lost one none)");
  app.add_option_function<std::uint32_t>(
         "--dde-replicas", [&b](std::uint32_t n) { b.dde_replicas = n; },
         "Local run, DFS or --assignment load: DDE replicas on the first N compute nodes (default 2, 1 with one "
         "compute node: a compute node that dies with the only DDE would stop pacing and assignment; the inputs "
         "take each proposal and assignment from the first replica it comes from). Role mode: the --config file's "
         "DDE endpoints; --simulate: nodes 0 and 1")
      ->type_name("N");
  app.add_option("--speed-up-threshold", b.speed_up_threshold, "ssu_TH, in %²")->capture_default_str();
  app.add_option("--speed-up-percent", b.speed_up_percent, "ssu_pct: the staged speed-up's step, in %")
      ->capture_default_str();
  app.add_option("--warmup-intervals", b.warmup_intervals,
                 "Intervals left out of the statistics (both schedulers): DFS runs best-effort until its DDE "
                 "proposes: the first 4 intervals (hist_cnt + 1 with --duration-rule paper)")
      ->capture_default_str();
  auto* duration = add_duration_option(app, "-t,--time,--duration", b.duration,
                                       "How long each scheduler runs (local run; --duration is the old name)");
  app.add_option_function<std::uint64_t>(
         "-n,--timeslices", [&b](std::uint64_t n) { b.timeslices = n; },
         "Run this many time-slices instead of a duration (required with --role)")
      ->excludes(duration);
  // The tools' --emulate (checked by its parser); every node gets it with node= set to its rank.
  add_emulate_option(app, o.emulate)
      ->description(fmt::format("The emulated network of every node (netio/emulation.hpp; 'none': plain loopback), "
                                "default '{}'. node= is set to each node's rank: inputs 0..N-1, compute nodes "
                                "N..N+M-1",
                                default_emulation));
  add_metrics_options(app, o.metrics);
  app.add_option("--fail", b.fail,
                 "Kill a compute node: 'compute:K,at=T' (compute node K, 0 to M-1, dies T after the start: a local "
                 "run closes its connections as a crash would, a role run's process kills itself with SIGKILL). The "
                 "inputs send its time-slices to the others; the summary counts lost and duplicated ones and the "
                 "recovery time (man netio_tsbench)")
      ->type_name("SPEC");
  app.add_option("--drain", b.drain,
                 "Drain a compute node: 'compute:K,at=T' (compute node K, 1 to M-1, drains T after the start: it "
                 "names a boundary, builds everything below it and leaves; the others take its time-slices from "
                 "there on (under --assignment load the DDE names the boundary); role mode: the process of "
                 "compute node K drains T after its start and ends once drained)")
      ->type_name("SPEC");
  app.add_option("--join", b.join,
                 "Join a compute node: 'compute,at=T' (slot M-1 stays out from the start, its time-slices built by "
                 "the others, and joins T after the start at a boundary a member (by load: the DDE) names; "
                 "--computes counts the slots; role mode: the last compute line, whose process joins T after its "
                 "own start); or an input: 'input,at=T' (input N-1 is on standby, time-slices are built without it "
                 "until the boundary a compute node (by load: the DDE) names after T, with it from there; local, "
                 "simulated and role runs)")
      ->type_name("SPEC");
  app.add_option("--slowdown", b.slowdown,
                 "Inject a slow-down: the parameters of an emulation slowdown= clause, e.g. "
                 "'node:4,at=6s,for=3s,rate=75%' (compute node 0 of a 4x4 run at 75 % of its in= rate for 3 s)")
      ->type_name("WINDOW");
  app.add_option(
         "--backend,--transport", b.transport,
         "Local run: the back-end, tcp or fabric (on loopback) or shm (Unix-domain); --transport is the old name")
      ->capture_default_str();
  app.add_option("--csv", o.csv,
                 "Write DIR/SCHEDULER/{timeslices,intervals,buffer_fill,bandwidth}.csv and DIR/summary.json "
                 "(their columns: man netio_tsbench)")
      ->type_name("DIR");
  app.add_flag("--json", o.json,
               "Print one JSON document: {best_effort|dfs: {timeslices, incomplete, spread_us: {median, p90, max}, "
               "gbps, buffer_fill_pct: {median, max}}, ratios: {spread_median, gbps}}");
  auto* role = app.add_option("--role", o.role, "Role mode: this process is one node of --config (input or compute)")
                   ->check(CLI::IsMember({"input", "compute"}));
  app.add_option_function<std::uint32_t>(
         "--rank", [&o](std::uint32_t rank) { o.rank = rank; },
         "Role mode: this node's line in --config, from 0 (default: SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK)")
      ->needs(role);
  app.add_option("--config", o.config, "Role mode: the file listing every node (see --help's footer)")
      ->type_name("FILE")
      ->needs(role);
  role->needs("--config");
  add_connect_timeout_option(app, o.connect_timeout)->needs(role);
  auto* simulate =
      app.add_flag("--simulate", o.simulate,
                   "Run the same engines in a discrete-event model of the network instead of over sockets "
                   "(ports and latency from --emulate, which then needs in= or out=; model time, deterministic for "
                   "the spec's seed=)")
          ->excludes(role);
  app.add_option("--port-sharing", o.port_sharing,
                 "--simulate: how a port shares its capacity between the connections sending at once: fair (fair "
                 "queueing: the buffer that would finish first byte by byte goes first, as at the emulator's ports) or "
                 "fifo (first come, first served)")
      ->check(CLI::IsMember({"fair", "fifo"}))
      ->capture_default_str()
      ->needs(simulate);
  app.add_option("--network", o.network,
                 "--simulate: ports (as the emulator: a queue per connection, node ports shared between connections) "
                 "or lossless (an input's port sends one contribution at a time at the rate its receiver gives it) "
                 "or fat-tree (ns-3's packet-level two-level fat-tree, every message as TCP segments through drop-tail "
                 "switch ports; links at the spec's in= rate; when built with ns-3) or fat-tree-lossless (the same "
                 "fat-tree at packet level with InfiniBand's link-level credits: a full switch buffer stops the link "
                 "feeding it, nothing is dropped, no TCP)")
      ->check(CLI::IsMember({"ports", "lossless", "fat-tree", "fat-tree-lossless"}))
      ->capture_default_str()
      ->needs(simulate);
  app.add_option("--core", o.core,
                 "--simulate, ports model: a switch core of this capacity (e.g. 10Gbps) shared by every buffer "
                 "between nodes: a network that congests before its ports do")
      ->type_name("RATE")
      ->needs(simulate);
  app.add_option("--leaf-size", o.leaf_size,
                 "--network fat-tree[-lossless]: hosts per leaf switch (inputs first, then compute nodes)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->needs(simulate);
  app.add_option(
         "--oversubscription", o.oversubscription,
         "--network fat-tree[-lossless]: N for N:1, the leaf's host links over its uplinks (spines = leaf size / "
         "N)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->needs(simulate);
  add_size_option(app, "--switch-buffer", o.switch_buffer,
                  "--network fat-tree: every switch port's drop-tail buffer; fat-tree-lossless: every switch input "
                  "port's buffer per lane (its link's credits)")
      ->needs(simulate);
  add_size_option(app, "--mtu", o.mtu,
                  "--network fat-tree: the IP packet size on every link (default 9000); fat-tree-lossless: the "
                  "largest packet, its 30-byte header included (default 4096)")
      ->needs(simulate);
  app.add_flag("--adaptive-routing", o.adaptive_routing,
               "--network fat-tree-lossless: a packet goes up by the least loaded uplink instead of the spine its "
               "destination maps to (D-mod-k)")
      ->needs(simulate);
  add_duration_option(app, "--tcp-min-rto", o.tcp_min_rto, "--network fat-tree: TCP's minimum retransmission timeout")
      ->needs(simulate);
  app.add_flag("--control-lane", o.control_lane,
               "--simulate, fifo ports: every message but the contributions (acknowledgements, credits, reports, "
               "proposals, clock samples) on a priority lane served before the contributions (a switch's priority "
               "class for control traffic)")
      ->needs(simulate);
  app.add_option("--timer-late", o.timer_late,
                 "--simulate: how late an input's timers fire (DFS's paced sends and interval starts), a distribution "
                 "as delay= in --emulate, e.g. 'lognormal:mean=100us,sigma=1' (default none: on time)")
      ->type_name("DIST")
      ->needs(simulate);
  app.add_option("--port-late", o.port_late,
                 "--simulate, ports model: how late a node's port releases a buffer it had to wait for (the emulator's "
                 "ports release on event-loop timers), a distribution as delay= in --emulate; whatever the port "
                 "releases meanwhile leaves with it, its capacity schedule does not move (default none: on time)")
      ->type_name("DIST")
      ->needs(simulate);
  add_duration_option(app, "--clock-offset", o.clock_offset,
                      "--simulate: every node's clock is off by up to this much (drawn from the seed)")
      ->needs(simulate);
  app.add_option("--clock-drift", o.clock_drift_ppm,
                 "--simulate: every node's clock drifts by up to this many ppm (drawn from the seed), [0, 10000]")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str()
      ->needs(simulate);
  app.add_option("--collect", o.collect,
                 "After a role run with --csv DIR on every process: merge DIR's records of every node and print the "
                 "summary (table or --json) of the whole system, as a local run does; writes the merged CSV files "
                 "and DIR/summary.json")
      ->type_name("DIR")
      ->excludes(role)
      ->excludes(simulate);
  add_cpu_option(app, o.cpu)
      ->description(
          "Pin this tool's threads (and the contributions' generators) to CPU N and every node's netio "
          "event-loop thread to CPU M (default: N as well)");
  add_timeout_option(app, o.timeout);
  app.footer(
      std::string(units_help) +
      "\n\nDefaults: 4 x 4 nodes, 16 KiB contributions, 16 credits per input-compute pair (receive buffers of\n"
      "16 x N x contribution-size: 1 MiB at 4 x 4), 1000 time-slices per interval, 12 s per scheduler,\n"
      "--emulate '" +
      std::string(default_emulation) +
      "'.\n"
      "Completion spread: the time between the first and the last contribution of a time-slice arriving at "
      "its\ncompute node. Gb/s: contribution bytes over the time they took to arrive. Buffer fill: sampled "
      "every 5 ms.\n\n"
      "--simulate: --network ports (default) shapes the network as the emulator does: every connection its\n"
      "own queue, a node's out= and in= passing whole buffers fairly between connections (a node without one\n"
      "is not limited there), a delay= draw per message, replies included. --network lossless: an input's\n"
      "port sends one contribution at a time at the rate the compute node's port gives it (a port without a\n"
      "figure gets the other one). --slowdown scales the nodes' ports; figures are in model time.\n\n"
      "Role mode: every process runs the same command with its own rank; the file lists one node per line:\n"
      "  input   [ENDPOINT]\n"
      "  compute ENDPOINT [DDE_ENDPOINT]     (a second endpoint: it runs a DDE replica there)\n"
      "Each process prints its own share (a compute node its time-slices, an input its intervals); with --csv DIR\n"
      "on every process (a shared directory), 'netio_tsbench --collect DIR' prints the whole system's summary.\n\n"
      "Exit status: 0 when every time-slice was built, 1 on failure (incomplete time-slices, a node lost,\n"
      "--timeout; in role mode a signal too), 128+N when a local or --simulate run is stopped by signal N\n"
      "(Ctrl-C), other non-zero values for bad arguments.");
}

ns::Mode mode_of(const std::string& name) { return name == "dfs" ? ns::Mode::dfs : ns::Mode::best_effort; }
std::string key_of(ns::Mode mode) { return mode == ns::Mode::dfs ? "dfs" : "best_effort"; }

int finish_output(const Options& o, const std::string& title, const std::vector<NamedSummary>& runs) {
  const auto json = summary_json(runs);
  if (!o.csv.empty()) {
    write_text(o.csv + "/summary.json", json);
    auto csv = summary_csv(runs);
    csv.pop_back();  // write_text adds the last newline
    write_text(o.csv + "/summary.csv", csv);
  }
  if (o.json)
    fmt::print("{}\n", json);
  else
    print_table(stdout, title, runs);
  return exit_ok;
}

// --simulate: the same records as a socket run, from the discrete-event model.
simulation::SimulationOptions simulation_options(const Options& o) {
  simulation::SimulationOptions so;
  so.sharing = o.port_sharing == "fifo" ? simulation::PortSharing::fifo : simulation::PortSharing::fair;
  so.network = o.network == "lossless" ? simulation::NetworkModel::lossless : simulation::NetworkModel::ports;
  if (o.network == "fat-tree") {
#ifdef NETIO_TSBENCH_FAT_TREE
    so.network = simulation::NetworkModel::packet;
    netio::fabric_model::FatTreeNetworkOptions f;
    f.leaf_size = o.leaf_size;
    f.oversubscription = o.oversubscription;
    f.port_buffer_bytes = o.switch_buffer;
    f.mtu_bytes = o.mtu ? o.mtu : 9000;
    f.tcp_min_rto = o.tcp_min_rto;
    f.control_lane = o.control_lane;
    try {
      so.packet_network = netio::fabric_model::fat_tree_network(f);
    } catch (const std::invalid_argument& e) {
      throw netio::Error(netio::Errc::invalid_option, e.what());
    }
#else
    throw netio::Error(netio::Errc::invalid_option,
                       "--network fat-tree: this netio_tsbench was built without ns-3 (NETIO_WITH_NS3, libns3-dev)");
#endif
  }
  if (o.network == "fat-tree-lossless") {
    so.network = simulation::NetworkModel::packet;
    netio::scheduler::simulation::LosslessFatTreeOptions f;
    f.leaf_size = o.leaf_size;
    f.oversubscription = o.oversubscription;
    f.port_buffer_bytes = o.switch_buffer;
    f.mtu_bytes = o.mtu ? o.mtu : 4096;
    f.adaptive = o.adaptive_routing;
    f.control_lane = o.control_lane;
    so.packet_network = netio::scheduler::simulation::lossless_fat_tree_network(f);
  }
  if (o.adaptive_routing && o.network != "fat-tree-lossless")
    throw netio::Error(netio::Errc::invalid_option, "--adaptive-routing is a part of --network fat-tree-lossless");

  if (!o.core.empty()) so.core = simulation::parse_core(o.core);
  so.max_clock_offset = o.clock_offset;
  so.max_clock_drift = o.clock_drift_ppm * 1e-6;
  if (!o.timer_late.empty()) so.timer_late = simulation::parse_timer_late(o.timer_late);
  if (!o.port_late.empty()) so.port_late = simulation::parse_port_late(o.port_late);
  so.control_lane = o.control_lane;
  return so;
}

LocalRunResult run_simulated(const Options& o, ns::Mode mode, const Deadline& deadline) {
  auto so = simulation_options(o);
  so.should_stop = [&deadline] { return stop_requested() || deadline.expired(); };
  auto simulated = simulation::simulate(o.bench, mode, so);
  // The model's own figures (deterministic), for the simulator's cost per event and per transfer.
  fmt::print(stderr, "{}: {}: simulated {} events, {:.3f} s of model time\n", tool_name, key_of(mode), simulated.events,
             static_cast<double>(simulated.end.count()) / 1e9);
  if (!simulated.network_summary.empty())
    fmt::print(stderr, "{}: {}: {}\n", tool_name, key_of(mode), simulated.network_summary);
  if (auto& gaps = simulated.replica_gaps; !gaps.empty()) {
    std::sort(gaps.begin(), gaps.end());
    const auto within = std::upper_bound(gaps.begin(), gaps.end(), std::chrono::microseconds(100)) - gaps.begin();
    fmt::print(stderr,
               "{}: dfs: a second DDE replica (compute node 1) proposed starts within 100 us of compute node "
               "0's for {:.1f} % of {} proposals (median {:.1f} us apart, p99 {:.1f} us)\n",
               tool_name, 100.0 * static_cast<double>(within) / static_cast<double>(gaps.size()), gaps.size(),
               static_cast<double>(gaps[gaps.size() / 2].count()) / 1e3,
               static_cast<double>(gaps[gaps.size() * 99 / 100].count()) / 1e3);
  }
  if (simulated.assignments_compared > 0) {
    fmt::print(stderr, "{}: {}: a second coordinator (compute node 1) decided {} of {} interval assignments alike\n",
               tool_name, key_of(mode), simulated.assignments_compared - simulated.assignment_mismatches,
               simulated.assignments_compared);
  }
  LocalRunResult result;
  result.records = std::move(simulated.records);
  result.error = std::move(simulated.error);
  result.interrupted = simulated.interrupted;
  return result;
}

int run_local_mode(const Options& o, const Deadline& deadline) {
  std::vector<ns::Mode> modes;
  if (o.compare)
    modes = {ns::Mode::best_effort, ns::Mode::dfs};
  else
    modes = {mode_of(o.scheduler)};
  std::vector<NamedSummary> runs;
  int status = exit_ok;
  for (const auto mode : modes) {
    fmt::print(stderr, "{}: {} x {}, {}...\n", tool_name, o.bench.inputs, o.bench.computes, key_of(mode));
    auto result = o.simulate ? run_simulated(o, mode, deadline) : run_local(o.bench, mode, deadline);
    if (!o.csv.empty()) write_csv(o.csv + "/" + key_of(mode), result.records);
    const auto summary = summarize(result.records);
    runs.push_back({key_of(mode), summary});
    if (!result.error.empty()) {
      fmt::print(stderr, "{}: error: {}: {}\n", tool_name, key_of(mode), result.error);
      status = exit_failure;
    } else if (summary.incomplete > 0) {
      fmt::print(stderr, "{}: error: {}: {} incomplete time-slices\n", tool_name, key_of(mode), summary.incomplete);
      status = exit_failure;
    } else if (summary.measured == 0 && !result.interrupted) {
      fmt::print(stderr,
                 "{}: error: {}: all {} time-slices fell within the first {} intervals (--warmup-intervals), "
                 "which the statistics leave out: run longer (-t, -n) or lower --warmup-intervals\n",
                 tool_name, key_of(mode), summary.timeslices, o.bench.warmup_intervals);
      status = exit_failure;
    }
    if (result.interrupted) {
      fmt::print(stderr, "{}: {} cut short ({})\n", tool_name, key_of(mode),
                 stop_requested() ? "stopped" : "--timeout");
      status = stop_requested() ? 128 + stop_signal() : exit_failure;
      break;
    }
  }
  const auto title = fmt::format(
      "{}: {}{} inputs x {} computes, {} contributions, {} buffers ({} credits per "
      "input-compute pair), {} time-slices per interval, emulate '{}'{}{}",
      tool_name, o.simulate ? fmt::format("simulated ({} in-ports, model time), ", o.port_sharing) : "", o.bench.inputs,
      o.bench.computes, format_size(o.bench.contribution_bytes), format_size(o.bench.buffer_bytes),
      o.bench.credits_per_pair(), o.bench.interval_timeslices, o.bench.emulate,
      o.bench.slowdown.empty() ? "" : ", slowdown " + o.bench.slowdown,
      o.bench.assignment == ns::Assignment::load ? ", assignment by load" : "");
  const int output = finish_output(o, title, runs);
  return status != exit_ok ? status : output;
}

int run_role_mode(const Options& o, const Deadline& deadline) {
  const auto cluster = read_cluster_config(o.config);
  const auto rank = resolve_rank(o.rank);
  if (rank < cluster.nodes.size()) {
    const bool is_input = cluster.nodes[rank].role == ClusterNode::Role::input;
    if (is_input != (o.role == "input")) {
      throw netio::Error(netio::Errc::invalid_option, fmt::format("--role {}, but rank {} of {} is {}", o.role, rank,
                                                                  o.config, is_input ? "an input" : "a compute node"));
    }
  }
  const auto mode = mode_of(o.scheduler);
  const auto& node = cluster.nodes.at(rank);
  const auto dir = o.csv.empty() ? std::string() : o.csv + "/" + key_of(mode) + "/rank-" + std::to_string(rank);
  std::string journal;
  if (!dir.empty() && node.role == ClusterNode::Role::compute) {
    // A compute node's run.csv first and its time-slices as they come: what --collect needs
    // of a node killed before it wrote its files.
    write_role_info(dir, RoleInfo{"compute", node.index, cluster.inputs, cluster.computes}, RunRecords{});
    journal = dir + "/journal.csv";
  }
  auto result = run_role(o.bench, mode, cluster, rank, o.connect_timeout, deadline, journal);
  if (!dir.empty()) {
    write_csv(dir, result.records);
    write_role_info(dir,
                    RoleInfo{node.role == ClusterNode::Role::compute ? "compute" : "input", node.index, cluster.inputs,
                             cluster.computes},
                    result.records);
  }
  int status = exit_ok;
  if (!result.error.empty()) {
    fmt::print(stderr, "{}: error: {}\n", tool_name, result.error);
    status = exit_failure;
  }
  const auto summary = summarize(result.records);
  if (summary.incomplete > 0) {
    fmt::print(stderr, "{}: {}: {} incomplete time-slices\n", tool_name, result.node, summary.incomplete);
    status = exit_failure;
  }
  const std::vector<NamedSummary> runs{{key_of(mode), summary}};
  if (o.json) {
    fmt::print("{}\n", summary_json(runs));
  } else {
    std::string buffer;  // a compute node's: the one it derived from the cluster's input count
    if (result.records.buffer_bytes > 0) {
      buffer =
          fmt::format(", {} buffer ({} credits per input-compute pair)", format_size(result.records.buffer_bytes),
                      ns::credits_per_input(result.records.buffer_bytes, cluster.inputs, o.bench.contribution_bytes));
    }
    print_table(stdout, fmt::format("{}: rank {}, {}{}", tool_name, rank, result.node, buffer), runs);
  }
  return status;
}

// --collect DIR: the whole system's summary from the role processes' CSV files.
int run_collect_mode(const Options& o) {
  const auto collected = collect_role_runs(o.collect);
  std::vector<NamedSummary> runs;
  int status = exit_ok;
  std::uint32_t computes = 0;
  std::uint32_t inputs = 0;
  for (const auto& run : collected) {
    if (!run.error.empty()) {
      fmt::print(stderr, "{}: error: {}: {}\n", tool_name, run.scheduler, run.error);
      status = exit_failure;
    }
    write_csv(o.collect + "/" + run.scheduler, run.records);
    const auto summary = summarize(run.records, ClockBasis::per_compute);
    if (summary.incomplete > 0) {
      fmt::print(stderr, "{}: error: {}: {} incomplete time-slices\n", tool_name, run.scheduler, summary.incomplete);
      status = exit_failure;
    }
    if (run.records.corrupt > 0) {
      fmt::print(stderr, "{}: error: {}: {} contributions with the wrong stamp\n", tool_name, run.scheduler,
                 run.records.corrupt);
      status = exit_failure;
    }
    computes = std::max(computes, run.computes_found);
    inputs = std::max(inputs, run.inputs_found);
    runs.push_back({run.scheduler, summary});
  }
  const auto title =
      fmt::format("{}: collected from {}: {} inputs x {} computes (Gb/s: the sum over the compute nodes)", tool_name,
                  o.collect, inputs, computes);
  Options output_options = o;
  output_options.csv = o.collect;  // DIR/summary.json next to the merged files
  const int output = finish_output(output_options, title, runs);
  return status != exit_ok ? status : output;
}

int run(const Options& o) {
  install_termination_handlers();
  if (o.cpu.tool_thread) pin_current_thread(*o.cpu.tool_thread);
  const Watchdog watchdog(tool_name, o.timeout);
  const Deadline deadline(o.timeout);
  const MetricsSession metrics(o.metrics);
  if (!o.role.empty()) return run_role_mode(o, deadline);
  if (!o.collect.empty()) return run_collect_mode(o);
  o.bench.validate();
  return run_local_mode(o, deadline);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "netio_tsbench: time-slice building (scheduled push) with N inputs and M compute nodes, best-effort "
      "or under the Data Flow Scheduler, on an emulated network",
      tool_name};
  Options options;
  add_options(app, options);
  add_version_flag(app);
  try {
    app.parse(argc, argv);
    if (!options.role.empty() && options.compare) {
      throw CLI::ValidationError("--compare", "runs both schedulers in one process; with --role give --scheduler");
    }
    options.bench.loop_cpu = options.cpu.loop_thread;
    options.bench.generator_cpu = options.cpu.tool_thread;
    if (options.emulate) options.bench.emulate = options.emulate->spec.empty() ? "none" : options.emulate->spec;
    if (app.count("--credits") > 0 && app.count("--buffer-size") > 0) {
      throw netio::Error(netio::Errc::invalid_option,
                         "--credits and --buffer-size both size the receive buffer (buffer = credits x inputs x "
                         "contribution size): give one of them");
    }
    if (app.count("--buffer-size") > 0 && options.bench.buffer_bytes == 0) {
      throw netio::Error(netio::Errc::invalid_option,
                         fmt::format("--buffer-size 0 gives no credits; give at least {} per input-compute pair "
                                     "(--credits {}) or leave it out",
                                     ns::min_credits_per_input, ns::min_credits_per_input));
    }
    // Role mode: the counts come from --config, and run_role() resolves the buffer with them.
    if (options.role.empty() && options.collect.empty()) options.bench.resolve();
    if (options.simulate) simulation::check_simulatable(options.bench, simulation_options(options));
    if (options.simulate && (!options.metrics.metrics.empty() || !options.metrics.influx.empty())) {
      // docs/design/metrics.md: a model's counters move in model time, a scrape's in wall time.
      throw netio::Error(netio::Errc::invalid_option,
                         "--metrics/--influx watch running sockets; --simulate runs none (its nodes live in model "
                         "time, which a scrape's rate() would misread): the simulated nodes' statistics are in "
                         "its output (--json, --csv DIR)");
    }
    if (const auto failing = options.bench.fail_spec();
        options.simulate && failing && failing->compute == 0 &&
        (options.compare || mode_of(options.scheduler) == ns::Mode::dfs)) {
      throw netio::Error(netio::Errc::invalid_option,
                         "--fail 'compute:0,...' with --simulate and DFS: the simulator does not model the DDE's node "
                         "failing (compute node 0): fail another compute node");
    }
  } catch (const CLI::ParseError& e) {
    return exit_for_parse_error(app, e);
  } catch (const netio::Error& e) {
    fmt::print(stderr, "{}: {}\n", tool_name, e.what());
    return exit_usage;
  }
  return run_tool(tool_name, [&] { return run(options); });
}
