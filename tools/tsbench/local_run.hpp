// SPDX-License-Identifier: MIT
// netio_tsbench's local mode: the whole system in this process, every node (N inputs, M
// compute nodes, a DDE replica inside compute node 0) on a Context of its own with its own
// emulated network, connected over loopback.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/records.hpp"

#include "common/deadline.hpp"

#include "netio/scheduler/input_node.hpp"

#include <string>

namespace netio::tools::tsbench {

struct LocalRunResult {
  RunRecords records;        // every compute node's and every input's, merged
  std::string error;         // what went wrong, empty when nothing
  bool interrupted = false;  // Ctrl-C or --timeout cut it short
};

// Runs one scheduler for bench.duration (or bench.timeslices), then lets every input finish
// the interval it is in and waits for every time-slice to be handed over.
LocalRunResult run_local(const BenchConfig& bench, scheduler::Mode mode, const Deadline& deadline);

}  // namespace netio::tools::tsbench
