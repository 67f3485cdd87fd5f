// SPDX-License-Identifier: MIT
// What one netio_tsbench run is: the system (N inputs × M computes), the sizes, the
// interval length, how long it runs, and the emulated network every node sits on.
// Shared by the local run (every node in this process) and the role run (one node per
// process), so that both build the same system from the same options.
#pragma once

#include "netio/emulation.hpp"
#include "netio/endpoint.hpp"
#include "netio/scheduler/config.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace netio::tools::tsbench {

// The default network: every compute node's incoming capacity (a switch port) shared by the
// inputs sending to it, and a log-normal latency with a long tail on every send. Chosen so
// that a 4 × 4 run on a 2-core machine shows the DFS effect within a minute (docs/performance.md,
// "Scheduled push").
inline constexpr const char* default_emulation = "delay=lognormal:mean=100us,sigma=1,clip=5ms;in=400Mbps";

// --fail 'compute:K,at=T': compute node K (0 .. M-1) dies T after the run's start.
struct FailSpec {
  std::uint32_t compute = 0;
  std::chrono::nanoseconds at{0};
};
// Throws netio::Error (Errc::invalid_option) quoting the text for a spec that does not parse.
FailSpec parse_fail_spec(const std::string& text);
// --drain 'compute:K,at=T' parses as --fail does; --join 'compute,at=T' or 'input,at=T': the
// time only (parse_join_spec), and which kind (join_kind_is_input).
// `option` names the option in the message.
FailSpec parse_compute_at(const std::string& text, const std::string& option);
std::chrono::nanoseconds parse_join_spec(const std::string& text);
bool join_kind_is_input(const std::string& text);

struct BenchConfig {
  std::uint32_t inputs = 4;
  std::uint32_t computes = 4;
  std::uint64_t contribution_bytes = 16 * 1024;
  // The receive buffer of every compute node, sized by one of two (resolve()):
  //   credits (--credits) per input–compute pair, default scheduler::default_credits_per_input
  //     (16): resolve() sets buffer_bytes = credits × inputs × contribution_bytes;
  //   buffer_bytes (--buffer-size) set before resolve(): the credits are then
  //     buffer_bytes / inputs / contribution_bytes (credits_per_pair()).
  // After resolve() buffer_bytes is always filled in: the runs (local, role, simulated)
  // read it. Fewer than scheduler::min_credits_per_input (2) per pair are refused.
  std::optional<std::uint32_t> credits;
  std::uint64_t buffer_bytes = 0;  // 0: derived from credits by resolve()
  // Time-slices per interval, whole rounds of M (~0.35 s at 4 x 4). Given (--interval): must be
  // a multiple of M. Not given: resolve() rounds default_interval_timeslices down to whole
  // rounds (at least one), as the engines did before they refused a remainder.
  static constexpr std::uint64_t default_interval_timeslices = 1000;
  std::uint64_t interval_timeslices = default_interval_timeslices;
  bool interval_given = false;
  std::uint32_t history_length = 10;                                          // hist_cnt
  double speed_up_threshold = 10.0;                                           // ssu_TH, %²
  double speed_up_percent = 5.0;                                              // ssu_pct
  scheduler::DurationRule duration_rule = scheduler::DurationRule::tracking;  // paper: the paper's Proposer
  scheduler::ClockRule clock_rule = scheduler::ClockRule::filtered;           // paper: the paper's Eq. 2
  scheduler::Assignment assignment = scheduler::Assignment::fixed;            // load: by the compute nodes' room
  bool fallback = true;                 // the DDE's safety net (SchedulerConfig::fallback); false: the paper's DDE
  std::uint32_t warmup_intervals = 12;  // left out of the statistics (DFS needs hist_cnt + 2)
  std::chrono::nanoseconds duration = std::chrono::seconds(12);
  std::optional<std::uint64_t> timeslices;  // a count instead of a duration (role mode needs it)
  std::string emulate = default_emulation;  // "" or "none": an unshaped loopback
  std::string slowdown;                     // a slowdown= clause's parameters, e.g. "node:4,at=5s,for=2s,rate=75%"
  std::string fail;                         // --fail: "compute:K,at=T" (a compute node dies), "" none
  // --dde-replicas: a local run's DDE replicas (DFS, assignment by load), on the first compute
  // nodes; not given: dde_replica_count()'s default.
  std::optional<std::uint32_t> dde_replicas;
  std::string drain;              // --drain: "compute:K,at=T" (compute node K drains at T), "" none
  std::string join;               // --join: "compute,at=T" (slot M-1 stays out until T), "" none
  std::string transport = "tcp";  // local run: tcp or fabric
  std::chrono::nanoseconds incomplete_timeout = std::chrono::seconds(5);
  std::chrono::nanoseconds sample_period = std::chrono::milliseconds(5);  // receive-buffer fill
  std::optional<int> loop_cpu;       // --cpu: every node's event-loop thread pinned here
  std::optional<int> generator_cpu;  // --cpu: the inputs' generator threads pinned here

  scheduler::SchedulerConfig scheduler_config() const;
  // --fail parsed; nullopt without one.
  std::optional<FailSpec> fail_spec() const;
  // The local run's DDE replicas: --dde-replicas, else 2 when there are 2 compute nodes or more
  // (the DDE fails over when compute node 0 dies), else 1.
  std::uint32_t dde_replica_count() const;
  // --drain parsed; --join's time; the standby slot --join keeps out until then (M - 1).
  std::optional<FailSpec> drain_spec() const;
  std::optional<std::chrono::nanoseconds> join_at() const;
  std::optional<std::uint32_t> standby_slot() const;
  // --join 'input,at=T': the standby input kept out until then (N - 1).
  std::optional<std::uint32_t> standby_input() const;
  // The emulation of node `rank` (inputs 0 .. N-1, computes N .. N+M-1): the spec with the
  // slow-down appended and node= set to the rank, so that slowdown=node:RANK picks that
  // node. nullopt when nothing is shaped.
  std::optional<EmulationConfig> node_emulation(std::uint32_t rank) const;
  // Fills in buffer_bytes from the credits when it is 0, then validate(). Call it once the
  // counts are final (role mode: after the cluster file gave them), before any run.
  // Throws netio::Error (Errc::invalid_option) when both --credits and --buffer-size size the
  // buffer, or as validate().
  void resolve();
  // Throws netio::Error (Errc::invalid_option) naming the option that is wrong; a buffer not
  // resolved yet (0) is an error too.
  void validate() const;
  // buffer_bytes / inputs / contribution_bytes (after resolve()).
  std::uint32_t credits_per_pair() const;
};

// The loopback endpoint a local node listens on (port 0) for the transport (fabric: the
// provider of NETIO_FABRIC_PROVIDER, else tcp).
Endpoint local_endpoint(const std::string& transport);

}  // namespace netio::tools::tsbench
