// SPDX-License-Identifier: MIT
// netio_tsbench --collect DIR: the summary of a role run (one node per process) from the
// CSV files every process wrote with --csv DIR, as the local run prints it.
//
// Every process of a role run writes DIR/SCHEDULER/rank-K/ (timeslices.csv, intervals.csv,
// buffer_fill.csv, bandwidth.csv, and run.csv: which node it was and what the statistics
// need; a compute node that drained or joined, membership.csv: which, and when on its
// clock). --collect reads them all, merges the records of every compute node and input per
// scheduler, writes the merged CSV files to DIR/SCHEDULER/ (plot_tsbench.sh reads them) and
// DIR/summary.json, and prints the table or --json of a local run.
//
// The nodes' clocks are their own (each counts from its own start, possibly on another
// host), so what compares times of two nodes is computed per compute node: the spread of a
// time-slice is within its compute node anyway; the bandwidth is the sum over the compute
// nodes of each one's bytes over its own first-to-last arrival; fill samples count from each
// node's first measured arrival.
#pragma once

#include "tsbench/records.hpp"

#include <string>
#include <vector>

namespace netio::tools::tsbench {

// What a role process adds to its CSV directory: DIR/run.csv.
struct RoleInfo {
  std::string role;  // "input" or "compute"
  std::uint32_t index = 0;
  std::uint32_t inputs = 0;
  std::uint32_t computes = 0;
};
void write_role_info(const std::string& dir, const RoleInfo& info, const RunRecords& records);

struct CollectedRun {
  std::string scheduler;  // "best_effort" or "dfs"
  RunRecords records;     // every node's, merged
  std::uint32_t computes_found = 0;
  std::uint32_t inputs_found = 0;
  std::string error;  // a node missing, or a file that does not parse
};

// Reads DIR/best_effort/rank-*/ and DIR/dfs/rank-*/ (those that exist). Throws netio::Error
// (Errc::invalid_option) when DIR holds neither.
std::vector<CollectedRun> collect_role_runs(const std::string& dir);

// The records read back from one --csv directory (the inverse of write_csv; times to 0.1 µs).
// Throws std::runtime_error naming the file and line that does not parse.
RunRecords read_csv(const std::string& dir);

}  // namespace netio::tools::tsbench
