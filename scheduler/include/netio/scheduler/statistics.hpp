// SPDX-License-Identifier: MIT
/// @file
/// The two statistics the engines share: the median of durations and the average of points
/// in time. Written once; the History Manager, the Proposer, the Clock Synchronizer and the
/// Input Engine all use these.
#pragma once

#include "netio/scheduler/time.hpp"

#include <span>
#include <vector>

namespace netio::scheduler {

/// The median; for an even count the mean of the two middle values, rounded towards the
/// lower one. Takes its argument by value (it reorders it). Throws netio::Error
/// (Errc::invalid_option) for an empty set.
Duration median(std::vector<Duration> values);
double median(std::vector<double> values);

/// The average of points in time, computed as offsets from the first one so that large
/// epochs (ns since 1970) cannot overflow; rounded towards the first. Throws for an empty set.
Time average(std::span<const Time> points);

}  // namespace netio::scheduler
