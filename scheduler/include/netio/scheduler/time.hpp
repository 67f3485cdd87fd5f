// SPDX-License-Identifier: MIT
/// @file
/// The one time type of the scheduler.
///
/// The engines never read a clock: the driver (a socket pattern or a discrete-event
/// simulator) passes the time in. Points in time and durations are both plain
/// std::chrono::nanoseconds: a point is nanoseconds since an arbitrary epoch of the clock of
/// the node that measured it (an input node's clock differs from a compute node's; the
/// ClockSynchronizer converts between them). Keeping one type lets a simulator use any epoch
/// and a real driver use steady_clock::now().time_since_epoch() without conversions.
#pragma once

#include <chrono>
#include <cstdint>

namespace netio::scheduler {

using Time = std::chrono::nanoseconds;      ///< a point: ns since an arbitrary epoch of one node's clock
using Duration = std::chrono::nanoseconds;  ///< a length of time

using TimesliceIndex = std::uint64_t;  ///< global time-slice number, 0, 1, 2, ...
using IntervalIndex = std::uint64_t;   ///< interval number; interval j holds time-slices [j*n, (j+1)*n)
using InputIndex = std::uint32_t;      ///< 0 .. input_count-1
using ComputeIndex = std::uint32_t;    ///< 0 .. compute_count-1

}  // namespace netio::scheduler
