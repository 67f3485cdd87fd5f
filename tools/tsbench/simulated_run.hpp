// SPDX-License-Identifier: MIT
// netio_tsbench --simulate: the command line's side of the simulator (netio::scheduler_simulation,
// netio/scheduler/simulation/simulate.hpp). It builds the simulated system from the same
// BenchConfig a socket run reads, and parses the options that are the simulator's own.
#pragma once

#include "tsbench/bench_config.hpp"
#include "tsbench/records.hpp"  // summarize() for what simulate() recorded

#include "netio/scheduler/simulation/simulate.hpp"

#include <string>

namespace netio::tools::tsbench::simulation {

using scheduler::simulation::NetworkModel;
using scheduler::simulation::PortSharing;
using scheduler::simulation::SimulatedSystem;
using scheduler::simulation::SimulationOptions;
using scheduler::simulation::SimulationResult;
using scheduler::simulation::to_string;

// The system `bench` describes: its counts, sizes and length, and every node's emulation
// (BenchConfig::node_emulation).
SimulatedSystem simulated_system(const BenchConfig& bench);

// scheduler::simulation::simulate() and check_simulatable() on simulated_system(bench).
SimulationResult simulate(const BenchConfig& bench, scheduler::Mode mode, const SimulationOptions& options);
void check_simulatable(const BenchConfig& bench, const SimulationOptions& options);

// The core's capacity from "RATE[,burst=SIZE]" ("10Gbps", as in= and out=; burst as their
// default: 4 ms at the rate, at least 64 KiB). Throws netio::Error (Errc::invalid_option) naming
// --core and the text.
RateLimit parse_core(const std::string& text);

// A distribution as delay= in an emulation spec ("lognormal:mean=100us,sigma=1"; "none").
// Throws netio::Error (Errc::invalid_option) naming --timer-late and the text.
DelayDistribution parse_timer_late(const std::string& text);
// The same, naming --port-late.
DelayDistribution parse_port_late(const std::string& text);

}  // namespace netio::tools::tsbench::simulation
