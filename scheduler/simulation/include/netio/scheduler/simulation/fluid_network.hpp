// SPDX-License-Identifier: MIT
// The network of netio_tsbench --simulate, as a fluid model: bytes flow continuously, and
// rates change only when a transfer starts or ends or a capacity changes.
//
// Every input node has an out-port, every compute node an in-port, each with a capacity
// (bytes per ns; infinity: unlimited). An input's out-port sends one contribution at a time,
// in the order the input handed them over (a NIC's send queue). While a contribution is on
// the wire it holds its out-port, at the rate its compute node's in-port gives it: links are
// lossless, a receiver that takes less slows its senders down (endpoint congestion, and
// head-of-line blocking at the sender: what the paper's offset round-robin is for). A
// transfer may also be capped on its own (the emulator's per-connection rate=).
//
// An in-port shares its capacity among the transfers arriving at once:
//   - fair: max-min (water-filling): each gets an equal share, and one that cannot use it
//     (capped by its out-port) leaves the rest to the others. What the emulator's in= does
//     ("fair queueing between the connections").
//   - fifo: first come, first served: the transfer that reached the port first gets all it
//     can take, the next one what is left, and so on; the others wait, holding their
//     out-ports. A receiver without fairness.
// Latency is not part of this model: the caller adds it after a transfer's last byte left.
//
// Pure and deterministic: no clock (times are passed in), no randomness; ties are broken by
// the order transfers reached their port, then by input index.
#pragma once

#include "netio/scheduler/simulation/shared_port.hpp"
#include "netio/scheduler/time.hpp"

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

namespace netio::scheduler::simulation {

namespace ns = netio::scheduler;

// What post() carries and the finished transfer gives back.
struct Transfer {
  std::uint32_t input = 0;
  std::uint32_t compute = 0;
  std::uint64_t bytes = 0;
  std::uint64_t tag = 0;  // the caller's (a time-slice)
  ns::Time posted{0};     // handed to the out-port
  ns::Time started{0};    // reached the head of the out-port (first byte on the wire)
  ns::Time finished{0};   // last byte left
};

class FluidNetwork {
 public:
  static constexpr double unlimited_rate = std::numeric_limits<double>::infinity();

  // All capacities start unlimited. Throws netio::Error (Errc::invalid_option) for zero ports.
  FluidNetwork(std::uint32_t inputs, std::uint32_t computes, PortSharing sharing);

  // Capacities in bytes per ns (> 0; unlimited_rate). Take effect at `now` (≥ the last time given).
  void set_out_capacity(std::uint32_t input, double bytes_per_ns, ns::Time now);
  void set_in_capacity(std::uint32_t compute, double bytes_per_ns, ns::Time now);
  // A cap of every transfer of this input on its own (the emulator's rate=).
  void set_transfer_cap(std::uint32_t input, double bytes_per_ns, ns::Time now);

  // Input `input` hands over `bytes` for compute node `compute` at `now`: queued behind the
  // input's earlier transfers.
  void post(std::uint32_t input, std::uint32_t compute, std::uint64_t bytes, std::uint64_t tag, ns::Time now);

  // When the next transfer finishes at the current rates; none when nothing moves.
  std::optional<ns::Time> next_finish() const;
  // Moves time on to `now` and returns the transfers that finished by then (in the order
  // they finished; at equal times by input index). Throws netio::Error (Errc::invalid_option)
  // for a time before the last one.
  std::vector<Transfer> advance(ns::Time now);

  // The rate (bytes per ns) the transfer at the head of `input`'s out-port gets now; 0 when idle.
  double current_rate(std::uint32_t input) const;
  std::size_t queued(std::uint32_t input) const { return outs_.at(input).queue.size(); }
  ns::Time now() const noexcept { return now_; }

 private:
  struct Active {
    Transfer transfer;
    double remaining = 0;             // bytes
    double rate = 0;                  // bytes per ns
    std::uint64_t arrival_order = 0;  // when it reached its in-port, for fifo
  };
  struct OutPort {
    double capacity = unlimited_rate;
    double transfer_cap = unlimited_rate;
    std::deque<Transfer> queue;  // waiting behind the head
    std::optional<Active> head;  // on the wire
  };
  struct InPort {
    double capacity = unlimited_rate;
  };

  void progress_to(ns::Time now);  // bytes move at the current rates
  void start_heads();              // idle out-ports take their next transfer
  void allocate();                 // recomputes every rate
  std::vector<Transfer> take_finished();

  PortSharing sharing_;
  std::vector<OutPort> outs_;
  std::vector<InPort> ins_;
  std::vector<std::vector<Active*>> at_port_;  // allocate()'s scratch: the heads at each in-port
  ns::Time now_{0};
  std::uint64_t next_arrival_order_ = 0;
};

}  // namespace netio::scheduler::simulation
