// SPDX-License-Identifier: MIT
// netio_tsbench's role mode: this process is one node (rank K) of a system listed in a
// cluster configuration file; every node runs the same command line. Each process records
// and summarises its own share: an input its intervals, a compute node its time-slices and
// its receive buffer.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/cluster_config.hpp"
#include "tsbench/records.hpp"

#include "common/deadline.hpp"

#include "netio/scheduler/input_node.hpp"

#include <string>

namespace netio::tools::tsbench {

struct RoleRunResult {
  RunRecords records;
  std::string node;   // "input 2", "compute 0"
  std::string error;  // empty when nothing went wrong
  bool interrupted = false;
};

// bench.timeslices must be set (the processes cannot agree on where a duration ends).
// The counts of the file override bench.inputs and bench.computes. An input waits up to
// `connect_timeout` for each node it sends to (0: without end). A compute node ends once it
// built its share and every input has gone; with `journal` it appends each time-slice it
// hands over to that file at once (ComputeRoleOptions::journal), and with bench.fail naming
// it, it kills itself (SIGKILL) at that moment. bench.drain naming it: it drains at that
// moment and ends once drained; bench.join: the last compute node is a standby slot in every
// process (the inputs do not wait for it to listen) and joins at that moment, T after its
// own process's start; bench.join 'input,at=T': the last input is on standby in every
// process and its own joins T after its start (fixed assignment only). Throws netio::Error
// (Errc::invalid_option) when the change would take the only DDE replica of the file away,
// the joining slot carries one, or an input joins under assignment by load.
RoleRunResult run_role(BenchConfig bench, scheduler::Mode mode, const ClusterConfig& cluster, std::uint32_t rank,
                       std::chrono::nanoseconds connect_timeout, const Deadline& deadline,
                       const std::string& journal = {});

}  // namespace netio::tools::tsbench
