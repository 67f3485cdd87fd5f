// SPDX-License-Identifier: MIT
#include "tsbench/collect.hpp"

#include "tsbench/report.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace netio::tools::tsbench {

namespace {

namespace fs = std::filesystem;

// One CSV file: its header checked, each row split at commas.
class CsvFile {
 public:
  CsvFile(const std::string& path, const std::string& header) : path_(path), file_(path) {
    if (!file_) throw std::runtime_error("cannot read " + path);
    std::string first;
    std::getline(file_, first);
    if (first != header) throw std::runtime_error(fmt::format("{}: header '{}', expected '{}'", path, first, header));
  }
  bool next(std::vector<std::string>& fields) {
    std::string line;
    while (std::getline(file_, line)) {
      ++line_;
      if (line.empty()) continue;
      fields.clear();
      std::istringstream row(line);
      for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
      if (!line.empty() && line.back() == ',') fields.emplace_back();
      return true;
    }
    return false;
  }
  [[noreturn]] void bad(const std::string& what) const {
    throw std::runtime_error(fmt::format("{}:{}: {}", path_, line_, what));
  }
  std::uint64_t unsigned_at(const std::vector<std::string>& f, std::size_t n) const {
    try {
      std::size_t used = 0;
      const auto value = std::stoull(f.at(n), &used);
      if (used == f[n].size()) return value;
    } catch (const std::exception&) {
    }
    bad(fmt::format("field {} is not a count", n + 1));
  }
  double number_at(const std::vector<std::string>& f, std::size_t n) const {
    try {
      std::size_t used = 0;
      const auto value = std::stod(f.at(n), &used);
      if (used == f[n].size() && std::isfinite(value)) return value;
    } catch (const std::exception&) {
    }
    bad(fmt::format("field {} is not a number", n + 1));
  }
  ns::Time micros_at(const std::vector<std::string>& f, std::size_t n) const {
    return ns::Time{static_cast<ns::Time::rep>(std::llround(number_at(f, n) * 1e3))};
  }
  void expect(const std::vector<std::string>& f, std::size_t count) const {
    if (f.size() != count) bad(fmt::format("{} fields, expected {}", f.size(), count));
  }

 private:
  std::string path_;
  std::ifstream file_;
  std::size_t line_ = 1;
};

constexpr const char* intervals_header =
    "input,interval,proposed_start_us,actual_start_us,proposed_duration_us,actual_duration_us";
constexpr const char* fill_header = "time_us,compute,fill_pct";
constexpr const char* run_header =
    "role,index,inputs,computes,buffer_bytes,timeslices_per_interval,warmup_intervals,peak_fill_pct,corrupt";
// A compute node that drained or joined (--drain, --join): which, and when on its own clock.
constexpr const char* membership_header = "change,compute,at_us";
// The standby input that joined (--join 'input,at=T'): which, when it asked on its own clock,
// and its boundary (the first time-slice built with it).
constexpr const char* input_join_header = "input,at_us,from";

void append(RunRecords& all, RunRecords part) {
  all.computes_failed += part.computes_failed;
  all.computes_drained += part.computes_drained;
  all.computes_joined += part.computes_joined;
  if (part.membership_at) all.membership_at = part.membership_at;
  if (part.joined_compute) all.joined_compute = part.joined_compute;
  all.inputs_joined += part.inputs_joined;
  if (part.input_join_from != 0) all.input_join_from = part.input_join_from;
  all.contributions_reassigned += part.contributions_reassigned;
  all.timeslices.insert(all.timeslices.end(), part.timeslices.begin(), part.timeslices.end());
  all.intervals.insert(all.intervals.end(), part.intervals.begin(), part.intervals.end());
  all.fill.insert(all.fill.end(), part.fill.begin(), part.fill.end());
}

}  // namespace

void write_role_info(const std::string& dir, const RoleInfo& info, const RunRecords& records) {
  fs::create_directories(dir);
  std::ofstream file(dir + "/run.csv");
  if (!file) throw std::runtime_error("cannot write " + dir + "/run.csv");
  file << run_header << '\n'
       << fmt::format("{},{},{},{},{},{},{},{:.2f},{}\n", info.role, info.index, info.inputs, info.computes,
                      records.buffer_bytes, records.timeslices_per_interval, records.warmup_intervals,
                      records.peak_fill_percent, records.corrupt);
  // An input's counts are what it saw of the others: the compute node that changed says so
  // (a run before in the same directory may have left one).
  fs::remove(dir + "/membership.csv");
  fs::remove(dir + "/input_join.csv");
  if (info.role == "input" && records.input_join_from != 0 && records.membership_at) {
    std::ofstream joined(dir + "/input_join.csv");
    if (!joined) throw std::runtime_error("cannot write " + dir + "/input_join.csv");
    joined << input_join_header << '\n'
           << fmt::format("{},{:.1f},{}\n", info.index, static_cast<double>(records.membership_at->count()) / 1e3,
                          records.input_join_from);
  }
  if (info.role != "compute" || !records.membership_at ||
      (records.computes_drained == 0 && records.computes_joined == 0))
    return;
  std::ofstream membership(dir + "/membership.csv");
  if (!membership) throw std::runtime_error("cannot write " + dir + "/membership.csv");
  membership << membership_header << '\n'
             << fmt::format("{},{},{:.1f}\n", records.computes_joined > 0 ? "joined" : "drained", info.index,
                            static_cast<double>(records.membership_at->count()) / 1e3);
}

RunRecords read_csv(const std::string& dir) {
  RunRecords records;
  std::vector<std::string> f;
  // A compute node killed before it wrote its files left its journal (run.csv and the
  // time-slices it handed over, nothing else): it counts as failed.
  const bool killed = !fs::exists(dir + "/timeslices.csv") && fs::exists(dir + "/journal.csv");
  if (killed) ++records.computes_failed;
  {
    CsvFile file(dir + (killed ? "/journal.csv" : "/timeslices.csv"), timeslices_csv_header);
    while (file.next(f)) {
      file.expect(f, 9);
      TimesliceRecord t;
      t.timeslice = file.unsigned_at(f, 0);
      t.compute = static_cast<ns::ComputeIndex>(file.unsigned_at(f, 1));
      t.complete = file.unsigned_at(f, 2) != 0;
      t.first_arrival = file.micros_at(f, 3);
      t.last_arrival = file.micros_at(f, 4);
      t.handed_over = file.micros_at(f, 6);
      t.bytes = file.unsigned_at(f, 7);
      t.attempt = static_cast<std::uint32_t>(file.unsigned_at(f, 8));
      records.timeslices.push_back(t);
    }
  }
  if (killed) return records;
  if (fs::exists(dir + "/membership.csv")) {
    CsvFile file(dir + "/membership.csv", membership_header);
    while (file.next(f)) {
      file.expect(f, 3);
      if (f[0] == "joined") {
        ++records.computes_joined;
        records.joined_compute = static_cast<ns::ComputeIndex>(file.unsigned_at(f, 1));
      } else if (f[0] == "drained") {
        ++records.computes_drained;
      } else {
        file.bad("change '" + f[0] + "', expected drained or joined");
      }
      records.membership_at = file.micros_at(f, 2);
    }
  }
  if (fs::exists(dir + "/input_join.csv")) {
    CsvFile file(dir + "/input_join.csv", input_join_header);
    while (file.next(f)) {
      file.expect(f, 3);
      ++records.inputs_joined;
      records.membership_at = file.micros_at(f, 1);
      records.input_join_from = file.unsigned_at(f, 2);
    }
  }
  {
    CsvFile file(dir + "/intervals.csv", intervals_header);
    while (file.next(f)) {
      file.expect(f, 6);
      IntervalRecord i;
      i.input = static_cast<ns::InputIndex>(file.unsigned_at(f, 0));
      i.interval = file.unsigned_at(f, 1);
      if (!f[2].empty()) i.proposed_start = file.micros_at(f, 2);
      i.actual_start = file.micros_at(f, 3);
      if (!f[4].empty()) i.proposed_duration = file.micros_at(f, 4);
      i.actual_duration = file.micros_at(f, 5);
      records.intervals.push_back(i);
    }
  }
  {
    CsvFile file(dir + "/buffer_fill.csv", fill_header);
    while (file.next(f)) {
      file.expect(f, 3);
      records.fill.push_back(FillSample{file.micros_at(f, 0), static_cast<ns::ComputeIndex>(file.unsigned_at(f, 1)),
                                        file.number_at(f, 2)});
    }
  }
  return records;
}

std::vector<CollectedRun> collect_role_runs(const std::string& dir) {
  std::vector<CollectedRun> runs;
  for (const char* scheduler : {"best_effort", "dfs"}) {
    const fs::path base = fs::path(dir) / scheduler;
    if (!fs::is_directory(base)) continue;
    CollectedRun run;
    run.scheduler = scheduler;
    std::set<std::uint32_t> computes;
    std::set<std::uint32_t> inputs;
    std::uint32_t expected_inputs = 0;
    std::uint32_t expected_computes = 0;
    std::vector<fs::path> ranks;
    for (const auto& entry : fs::directory_iterator(base)) {
      if (entry.is_directory() && entry.path().filename().string().rfind("rank-", 0) == 0)
        ranks.push_back(entry.path());
    }
    std::sort(ranks.begin(), ranks.end());
    try {
      for (const auto& rank : ranks) {
        CsvFile info(rank.string() + "/run.csv", run_header);
        std::vector<std::string> f;
        if (!info.next(f)) info.bad("no row");
        info.expect(f, 9);
        const auto index = static_cast<std::uint32_t>(info.unsigned_at(f, 1));
        expected_inputs = static_cast<std::uint32_t>(info.unsigned_at(f, 2));
        expected_computes = static_cast<std::uint32_t>(info.unsigned_at(f, 3));
        if (f[0] == "compute") {
          if (!computes.insert(index).second) info.bad(fmt::format("compute node {} twice", index));
          if (info.unsigned_at(f, 4) != 0) {  // 0: a killed node's run.csv, written at its start
            run.records.buffer_bytes = info.unsigned_at(f, 4);
            run.records.timeslices_per_interval = info.unsigned_at(f, 5);
            run.records.warmup_intervals = static_cast<std::uint32_t>(info.unsigned_at(f, 6));
          }
          run.records.peak_fill_percent = std::max(run.records.peak_fill_percent, info.number_at(f, 7));
          run.records.corrupt += info.unsigned_at(f, 8);
        } else if (f[0] == "input") {
          if (!inputs.insert(index).second) info.bad(fmt::format("input {} twice", index));
        } else {
          info.bad("role '" + f[0] + "'");
        }
        append(run.records, read_csv(rank.string()));
      }
    } catch (const std::exception& e) {
      run.error = e.what();
    }
    run.computes_found = static_cast<std::uint32_t>(computes.size());
    run.inputs_found = static_cast<std::uint32_t>(inputs.size());
    if (run.error.empty() && (computes.size() != expected_computes || inputs.size() != expected_inputs)) {
      run.error = fmt::format("{}: the records of {} of {} compute nodes and {} of {} inputs", base.string(),
                              computes.size(), expected_computes, inputs.size(), expected_inputs);
    }
    std::sort(run.records.timeslices.begin(), run.records.timeslices.end(),
              [](const auto& a, const auto& b) { return a.timeslice < b.timeslice; });
    std::stable_sort(run.records.intervals.begin(), run.records.intervals.end(), [](const auto& a, const auto& b) {
      return a.input != b.input ? a.input < b.input : a.interval < b.interval;
    });
    runs.push_back(std::move(run));
  }
  if (runs.empty()) {
    throw Error(Errc::invalid_option,
                fmt::format("--collect {}: neither {}/best_effort nor {}/dfs (write them with --role ... --csv {})",
                            dir, dir, dir, dir));
  }
  return runs;
}

}  // namespace netio::tools::tsbench
