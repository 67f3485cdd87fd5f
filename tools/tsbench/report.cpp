// SPDX-License-Identifier: MIT
#include "tsbench/report.hpp"

#include "common/json_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace netio::tools::tsbench {

namespace {

double micros(ns::Duration d) { return static_cast<double>(d.count()) / 1e3; }

const RunSummary* find(const std::vector<NamedSummary>& runs, const std::string& name) {
  for (const auto& run : runs) {
    if (run.scheduler == name) return &run.summary;
  }
  return nullptr;
}

std::ofstream open_file(const std::string& path) {
  std::ofstream file(path);
  if (!file) throw std::runtime_error("cannot write " + path);
  return file;
}

// A figure of the measured time-slices; NaN (JSON null, "-" in the table) when none was
// measured (all within the warm-up), so that nobody reads a zero as a result.
double measured(const RunSummary& s, double value) {
  return s.measured > 0 ? value : std::numeric_limits<double>::quiet_NaN();
}

std::string cell(double value, int width, int precision) {
  if (std::isnan(value)) return fmt::format("{:>{}}", "-", width);
  return fmt::format("{:>{}.{}f}", value, width, precision);
}

}  // namespace

std::optional<Ratios> ratios(const std::vector<NamedSummary>& runs) {
  const auto* best_effort = find(runs, "best_effort");
  const auto* dfs = find(runs, "dfs");
  if (best_effort == nullptr || dfs == nullptr) return std::nullopt;
  Ratios r;
  if (best_effort->measured == 0 || dfs->measured == 0) {
    r.spread_median = r.gbps = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  r.spread_median = dfs->spread_median_us > 0 ? best_effort->spread_median_us / dfs->spread_median_us : 0;
  r.gbps = best_effort->gbps > 0 ? dfs->gbps / best_effort->gbps : 0;
  return r;
}

void print_table(std::FILE* out, const std::string& title, const std::vector<NamedSummary>& runs) {
  fmt::print(out, "{}\n", title);
  fmt::print(out, "{:<12} {:>10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>10} {:>10}\n", "scheduler", "timeslices",
             "incomplete", "spread med", "spread p90", "spread max", "Gb/s", "fill med", "fill max");
  fmt::print(out, "{:<12} {:>10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>10} {:>10}\n", "", "", "", "us", "us", "us", "",
             "%", "%");
  for (const auto& [name, s] : runs) {
    fmt::print(out, "{:<12} {:>10} {:>10} {} {} {} {} {:>10.1f} {:>10.1f}\n", name, s.timeslices, s.incomplete,
               cell(measured(s, s.spread_median_us), 12, 1), cell(measured(s, s.spread_p90_us), 12, 1),
               cell(measured(s, s.spread_max_us), 12, 1), cell(measured(s, s.gbps), 8, 3), s.fill_median_pct,
               s.fill_max_pct);
  }
  for (const auto& [name, s] : runs) {
    if (s.computes_failed > 0 || s.computes_lost > 0 || s.duplicates > 0 || s.lost > 0) {
      fmt::print(out,
                 "{}: {} compute node(s) failed, lost by the inputs: {}; {} time-slices lost, {} built by another "
                 "node, {} built twice ({} with the same attempt); {} contributions reassigned\n",
                 name, s.computes_failed, s.computes_lost, s.lost, s.reassigned, s.duplicates, s.same_attempt,
                 s.contributions_reassigned);
    }
    if (s.computes_failed > 0) {
      fmt::print(out,
                 "{}: aggregate before the failure {:.3f} Gb/s; back to 0.95 x (M-1)/M of it {} after it (200 ms "
                 "windows; the lowest in the 2 s after it {:.3f} Gb/s)\n",
                 name, s.capacity_before_gbps,
                 std::isnan(s.recovery_ms) ? std::string("never") : fmt::format("{:.0f} ms", s.recovery_ms),
                 s.lowest_after_gbps);
      if (!s.dde_replicas_lost.empty()) {
        fmt::print(out, "{}: DDE replica(s) lost with it: on compute node(s) {}\n", name,
                   fmt::join(s.dde_replicas_lost, " "));
      }
      if (s.proposals_after_failure > 0 || s.assignments_after_failure > 0) {
        fmt::print(out, "{}: after the failure the inputs took {} proposal(s) and {} assignment(s)\n", name,
                   s.proposals_after_failure, s.assignments_after_failure);
      }
    }
    if (s.computes_drained > 0 || s.computes_joined > 0) {
      // An input's own summary in role mode has no time-slices: no aggregate to print.
      const bool aggregate = !std::isnan(s.membership_before_gbps) || !std::isnan(s.membership_after_gbps);
      fmt::print(out, "{}: {} compute node(s) drained, {} joined{}{}\n", name, s.computes_drained, s.computes_joined,
                 aggregate ? fmt::format("; aggregate {:.3f} Gb/s in the 2 s before, {:.3f} from 1 s after",
                                         s.membership_before_gbps, s.membership_after_gbps)
                           : std::string(),
                 s.computes_joined > 0 && !std::isnan(s.joined_first_ms)
                     ? fmt::format("; the joined node's first time-slice {:.0f} ms after the join", s.joined_first_ms)
                     : std::string());
    }
    if (s.inputs_joined > 0) {
      // Role mode: a member input or a compute node may know no boundary or no aggregate.
      const bool aggregate = !std::isnan(s.membership_before_gbps) || !std::isnan(s.membership_after_gbps);
      fmt::print(out, "{}: a standby input joined{}{}\n", name,
                 s.input_join_from != 0 ? fmt::format(" at time-slice {}", s.input_join_from) : std::string(),
                 aggregate ? fmt::format("; aggregate {:.3f} Gb/s in the 2 s before, {:.3f} from 1 s after",
                                         s.membership_before_gbps, s.membership_after_gbps)
                           : std::string());
    }
    if (s.pushes_blocked > 0) {
      fmt::print(out, "{}: the inputs waited {:.3f} s in push() (every compute node full), {} pushes\n", name,
                 s.push_blocked_s, s.pushes_blocked);
    }
    if (s.assignment_waits > 0) {
      fmt::print(out, "{}: the inputs waited {:.3f} s for the coordinator's assignments, {} times\n", name,
                 s.assignment_wait_s, s.assignment_waits);
    }
    if (s.assignment) {
      fmt::print(out, "{}: the current assignment (interval {}): shares {} (compute node 0 first)\n", name,
                 s.assignment->interval, fmt::join(s.assignment->shares, " "));
    }
    if (s.fallback && s.fallback->engaged > 0) {
      fmt::print(out,
                 "{}: pacing lost to best-effort {} time(s) ({} on the spread rule); the DDE ran {} interval(s) "
                 "best-effort\n",
                 name, s.fallback->engaged, s.fallback->engaged_on_spread, s.fallback->best_effort_intervals);
    }
  }
  if (const auto r = ratios(runs)) {
    if (std::isnan(r->spread_median)) {
      fmt::print(out, "DFS against best-effort: nothing measured (every time-slice within the warm-up)\n");
    } else {
      fmt::print(out, "DFS cuts the median completion spread {:.1f}x; bandwidth DFS / best-effort {:.3f}\n",
                 r->spread_median, r->gbps);
    }
  }
}

std::string summary_json(const std::vector<NamedSummary>& runs) {
  JsonWriter json;
  json.begin_object();
  for (const auto& [name, s] : runs) {
    json.key(name).begin_object();
    json.field("timeslices", s.timeslices).field("incomplete", s.incomplete);
    json.key("spread_us").begin_object();
    json.field("median", measured(s, s.spread_median_us))
        .field("p90", measured(s, s.spread_p90_us))
        .field("max", measured(s, s.spread_max_us));
    json.end_object();
    json.field("gbps", measured(s, s.gbps));
    json.key("buffer_fill_pct").begin_object();
    json.field("median", s.fill_median_pct).field("max", s.fill_max_pct);
    json.end_object();
    json.field("lost", s.lost)
        .field("duplicates", s.duplicates)
        .field("duplicates_same_attempt", s.same_attempt)
        .field("reassigned", s.reassigned);
    json.key("failure").begin_object();
    json.field("computes_failed", s.computes_failed)
        .field("computes_lost", s.computes_lost)
        .field("contributions_reassigned", s.contributions_reassigned)
        .field("capacity_before_gbps", s.capacity_before_gbps)
        .field("recovery_ms", s.recovery_ms)
        .field("lowest_after_gbps", s.lowest_after_gbps)
        .field("proposals_after_failure", s.proposals_after_failure)
        .field("assignments_after_failure", s.assignments_after_failure);
    json.key("dde_replicas_lost").begin_array();
    for (const auto c : s.dde_replicas_lost) json.value(c);
    json.end_array();
    json.end_object();
    json.key("membership").begin_object();
    json.field("computes_drained", s.computes_drained)
        .field("computes_joined", s.computes_joined)
        .field("before_gbps", s.membership_before_gbps)
        .field("after_gbps", s.membership_after_gbps)
        .field("joined_first_ms", s.joined_first_ms)
        .field("inputs_joined", s.inputs_joined)
        .field("input_join_from", s.input_join_from);
    json.end_object();
    json.key("backpressure").begin_object();
    json.field("pushes_blocked", s.pushes_blocked).field("push_blocked_s", s.push_blocked_s);
    json.field("assignment_waits", s.assignment_waits).field("assignment_wait_s", s.assignment_wait_s);
    json.end_object();
    if (s.assignment) {
      json.key("assignment").begin_object().field("interval", s.assignment->interval).key("shares").begin_array();
      for (const auto share : s.assignment->shares) json.value(share);
      json.end_array().end_object();
    }
    if (s.fallback) {
      json.key("fallback").begin_object();
      json.field("engaged", s.fallback->engaged)
          .field("engaged_on_spread", s.fallback->engaged_on_spread)
          .field("best_effort_intervals", s.fallback->best_effort_intervals);
      json.end_object();
    }
    json.end_object();
  }
  if (const auto r = ratios(runs)) {
    json.key("ratios").begin_object().field("spread_median", r->spread_median).field("gbps", r->gbps).end_object();
  }
  json.end_object();
  return json.str();
}

std::string summary_csv(const std::vector<NamedSummary>& runs) {
  std::string csv =
      "scheduler,timeslices,incomplete,gbps,lost,duplicates,duplicates_same_attempt,reassigned,"
      "contributions_reassigned,computes_failed,computes_lost,recovery_ms,pushes_blocked,push_blocked_s,"
      "assigned_interval,assigned_shares,computes_drained,computes_joined\n";
  for (const auto& [name, s] : runs) {
    const auto number = [](double value) { return std::isnan(value) ? std::string() : fmt::format("{:.6g}", value); };
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", name, s.timeslices, s.incomplete,
                       number(measured(s, s.gbps)), s.lost, s.duplicates, s.same_attempt, s.reassigned,
                       s.contributions_reassigned, s.computes_failed, s.computes_lost,
                       number(s.computes_failed > 0 ? s.recovery_ms : std::nan("")), s.pushes_blocked,
                       number(s.push_blocked_s), s.assignment ? std::to_string(s.assignment->interval) : std::string(),
                       s.assignment ? fmt::format("{}", fmt::join(s.assignment->shares, ";")) : std::string(),
                       s.computes_drained, s.computes_joined);
  }
  return csv;
}

void write_csv(const std::string& dir, const RunRecords& records) {
  std::filesystem::create_directories(dir);
  {
    auto file = open_file(dir + "/timeslices.csv");
    file << timeslices_csv_header << '\n';
    for (const auto& t : records.timeslices) file << timeslice_csv_row(t);
  }
  {
    auto file = open_file(dir + "/intervals.csv");
    file << "input,interval,proposed_start_us,actual_start_us,proposed_duration_us,actual_duration_us\n";
    for (const auto& i : records.intervals) {
      const auto optional_us = [](const auto& value) {
        return value ? fmt::format("{:.1f}", micros(*value)) : std::string();
      };
      file << fmt::format("{},{},{},{:.1f},{},{:.1f}\n", i.input, i.interval, optional_us(i.proposed_start),
                          micros(i.actual_start), optional_us(i.proposed_duration), micros(i.actual_duration));
    }
  }
  {
    auto file = open_file(dir + "/buffer_fill.csv");
    file << "time_us,compute,fill_pct\n";
    for (const auto& f : records.fill) file << fmt::format("{:.1f},{},{:.2f}\n", micros(f.at), f.compute, f.percent);
  }
  {
    auto file = open_file(dir + "/bandwidth.csv");
    file << "time_s,gbps\n";
    for (const auto& b : bandwidth_over_time(records, std::chrono::milliseconds(250))) {
      file << fmt::format("{:.3f},{:.4f}\n", static_cast<double>(b.start.count()) / 1e9, b.gbps);
    }
  }
}

std::string timeslice_csv_row(const TimesliceRecord& t) {
  return fmt::format("{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{},{}\n", t.timeslice, t.compute, t.complete ? 1 : 0,
                     micros(t.first_arrival), micros(t.last_arrival), micros(t.last_arrival - t.first_arrival),
                     micros(t.handed_over), t.bytes, t.attempt);
}

void write_text(const std::string& path, const std::string& text) {
  auto file = open_file(path);
  file << text << '\n';
}

}  // namespace netio::tools::tsbench
