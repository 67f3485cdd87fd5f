// SPDX-License-Identifier: MIT
#include "netio/scheduler/clock_synchronizer.hpp"

#include "netio/error.hpp"
#include "netio/scheduler/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace netio::scheduler {
namespace {

Duration scaled(double factor, Duration d) {
  return Duration{static_cast<Duration::rep>(std::llround(factor * static_cast<double>(d.count())))};
}

// The drift of the samples' lower envelope: queueing only ever adds to a sample, so the
// samples that queued least lie on a line whose slope is the drift, and those that queued
// long lie above it. The envelope is the lower convex hull of the samples; its slope is the
// median of its edges' slopes, each weighted by the time the edge spans. (The linear program
// of Moon, Skelly and Towsley takes the one edge above the samples' mean time instead; a
// step in the least queueing — the first intervals of a run queue for milliseconds, the
// paced ones for less — makes that edge a steep one across the step. Weighted by time, a
// step's edge, one interval wide, does not count; nor does an edge steeper than max_drift,
// which no clock drifts by: the first samples of a run, all queued long, make one from the
// oldest sample down to the first that queued little.) Samples are in time order.
double lower_envelope_slope(const std::deque<ClockSynchronizer::Sample>& samples, double max_drift) {
  struct Point {
    double t, d;  // ns since the first sample, offset in ns
  };
  const Time origin = samples.front().end;
  std::vector<Point> hull;
  for (const auto& s : samples) {
    const Point p{static_cast<double>((s.end - origin).count()), static_cast<double>(s.offset.count())};
    if (!hull.empty() && hull.back().t == p.t) {  // same time: the lower one only
      if (p.d >= hull.back().d) continue;
      hull.pop_back();
    }
    // Andrew's monotone chain, lower half: drop the last point while it lies on or above
    // the segment from the one before it to p.
    while (hull.size() >= 2) {
      const Point& a = hull[hull.size() - 2];
      const Point& b = hull.back();
      if ((b.t - a.t) * (p.d - a.d) - (b.d - a.d) * (p.t - a.t) > 0) break;  // b lies below a→p: keep
      hull.pop_back();
    }
    hull.push_back(p);
  }
  if (hull.size() < 2) return 0;
  struct Edge {
    double slope, span;
  };
  std::vector<Edge> edges;
  double total = 0;
  for (std::size_t k = 1; k < hull.size(); ++k) {
    const double span = hull[k].t - hull[k - 1].t;
    const double slope = (hull[k].d - hull[k - 1].d) / span;
    if (std::abs(slope) > max_drift) continue;  // no clock: a step in the queueing
    edges.push_back({slope, span});
    total += span;
  }
  if (edges.empty()) return 0;
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.slope < y.slope; });
  double covered = 0;
  for (const auto& e : edges) {
    covered += e.span;
    if (covered >= total / 2) return e.slope;
  }
  return edges.back().slope;
}

}  // namespace

ClockSynchronizer::ClockSynchronizer(std::uint32_t input_count, std::uint32_t history_length, double max_drift,
                                     ClockRule rule, std::uint32_t filter_length)
    : history_length_(history_length),
      max_drift_(std::abs(max_drift)),
      rule_(rule),
      filter_length_(std::max<std::uint32_t>(filter_length, 1)),
      inputs_(input_count) {}

const ClockSynchronizer::Input& ClockSynchronizer::input(InputIndex i) const {
  if (i >= inputs_.size()) {
    throw Error(Errc::invalid_option, "clock synchronizer: input " + std::to_string(i) + " out of range (" +
                                          std::to_string(inputs_.size()) + " inputs)");
  }
  return inputs_[i];
}

bool ClockSynchronizer::on_report(InputIndex i, IntervalIndex interval, Time interval_end, Duration latency,
                                  Time received_at) {
  input(i);  // range check
  Input& in = inputs_[i];
  if (in.last_interval && interval <= *in.last_interval) return false;
  if (rule_ == ClockRule::filtered) {
    filter(in, interval_end, received_at - interval_end);
    in.last_interval = interval;
    update_common_drift();
    return true;
  }
  const Duration offset = received_at - interval_end - latency;  // Eq. 2
  if (in.last_interval && interval_end > in.last_end) {          // Eq. 3, one sample
    const double sample =
        static_cast<double>((offset - in.offset).count()) / static_cast<double>((interval_end - in.last_end).count());
    in.drifts.push_back(sample);
    if (in.drifts.size() > history_length_) in.drifts.pop_front();
    in.paper_drift =
        std::clamp(median(std::vector<double>(in.drifts.begin(), in.drifts.end())), -max_drift_, max_drift_);
  }
  in.last_interval = interval;
  in.last_end = interval_end;
  in.offset = offset;
  return true;
}

bool ClockSynchronizer::on_sample(InputIndex i, Time sent_at, Time received_at) {
  input(i);  // range check
  if (rule_ != ClockRule::filtered) return false;
  Input& in = inputs_[i];
  // Older than every kept sample (it queued for longer than filter_length reports): no news.
  if (in.samples.size() >= 4 * std::size_t{filter_length_} && sent_at < in.samples.front().end) return false;
  filter(in, sent_at, received_at - sent_at);
  update_common_drift();
  return true;
}

void ClockSynchronizer::filter(Input& in, Time at, Duration sample) const {
  auto& kept = in.samples;
  // In the IE's time order: an interval's start sample is older than the report of the
  // interval before it, which its last acknowledgement held back.
  auto place = kept.end();
  while (place != kept.begin() && std::prev(place)->end > at) --place;
  kept.insert(place, Sample{at, sample});
  if (kept.size() > 4 * std::size_t{filter_length_}) kept.pop_front();
  const Time newest = kept.back().end;
  in.slope.reset();
  if (kept.size() >= slope_samples && newest > kept.front().end) {
    in.slope = std::clamp(lower_envelope_slope(kept, max_drift_), -max_drift_, max_drift_);
  }
  if (kept.size() >= 2 * std::size_t{filter_length_} && in.slope) in.drift = *in.slope;
  // The newest filter_length samples, each moved to the newest one's time by the drift (the
  // common one until this IE's own is known); the least.
  const double drift = in.drift ? *in.drift : common_drift_;
  Duration offset = kept.back().offset;
  for (auto it = kept.end() - std::min<std::ptrdiff_t>(filter_length_, std::ssize(kept)); it != kept.end(); ++it) {
    offset = std::min(offset, it->offset + scaled(drift, newest - it->end));
  }
  in.offset = offset;
  in.last_end = newest;
}

void ClockSynchronizer::update_common_drift() {
  // The median of the IEs' envelope slopes: the local clock's rate against the IEs' typical
  // one. A wrong estimate moves every IE's offset alike, so it does not set the IEs apart.
  // Only once every IE has one, so that it does not depend on the order the reports came in
  // (nor does a proposal: an interval completes when every IE reported it).
  std::vector<double> slopes;
  slopes.reserve(inputs_.size());
  for (const Input& in : inputs_) {
    if (!in.slope) return;
    slopes.push_back(*in.slope);
  }
  common_drift_ = median(std::move(slopes));
}

void ClockSynchronizer::on_handshake(InputIndex i, Time remote_at, Duration offset) {
  input(i);  // range check
  Input& in = inputs_[i];
  if (in.last_interval) return;
  in.handshake = true;
  in.last_end = remote_at;
  in.offset = offset;
}

bool ClockSynchronizer::knows(InputIndex i) const { return input(i).last_interval.has_value() || input(i).handshake; }
Duration ClockSynchronizer::offset(InputIndex i) const { return input(i).offset; }
double ClockSynchronizer::drift(InputIndex i) const {
  const Input& in = input(i);
  if (rule_ == ClockRule::paper) return in.paper_drift;
  return in.drift ? *in.drift : common_drift_;
}

Time ClockSynchronizer::to_local(InputIndex i, Time remote) const {
  const Input& in = input(i);
  return remote + in.offset + scaled(drift(i), remote - in.last_end);
}

Time ClockSynchronizer::to_remote(InputIndex i, Time local) const {
  // Solves local = x + offset + drift * (x - last_end) for x, relative to last_end so that
  // the double holds a small number, not ns since the epoch.
  const Input& in = input(i);
  const Duration since_end = local - in.offset - in.last_end;
  // A drift of -100 % or less is no clock (a driver fed times of different clocks): no
  // extrapolation rather than a division by zero.
  const double rate = 1.0 + drift(i);
  return in.last_end + (rate > 0 ? scaled(1.0 / rate, since_end) : since_end);
}

}  // namespace netio::scheduler
