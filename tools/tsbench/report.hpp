// SPDX-License-Identifier: MIT
// netio_tsbench's output: the summary table, the JSON document of --json
// (docs/man/netio_tsbench.1.md) and the CSV files of --csv DIR.
#pragma once

#include "tsbench/records.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace netio::tools::tsbench {

struct NamedSummary {
  std::string scheduler;  // "best_effort" or "dfs" (the JSON key)
  RunSummary summary;
};

// best-effort median spread / DFS median spread (how many times DFS cuts it) and DFS Gb/s /
// best-effort Gb/s; none unless both schedulers ran.
struct Ratios {
  double spread_median = 0;
  double gbps = 0;
};
std::optional<Ratios> ratios(const std::vector<NamedSummary>& runs);

void print_table(std::FILE* out, const std::string& title, const std::vector<NamedSummary>& runs);

// {"best_effort": {...}, "dfs": {...}, "ratios": {"spread_median", "gbps"}} (ratios only when
// both ran).
std::string summary_json(const std::vector<NamedSummary>& runs);

// timeslices.csv: its header, and one time-slice's line (with its newline).
inline constexpr const char* timeslices_csv_header =
    "timeslice,compute,complete,first_arrival_us,last_arrival_us,spread_us,handed_over_us,bytes,attempt";
std::string timeslice_csv_row(const TimesliceRecord& t);

// DIR/timeslices.csv, intervals.csv, buffer_fill.csv, bandwidth.csv. Creates DIR. Throws
// std::runtime_error naming a file it cannot write.
void write_csv(const std::string& dir, const RunRecords& records);
// DIR/summary.json.
void write_text(const std::string& path, const std::string& text);

}  // namespace netio::tools::tsbench
