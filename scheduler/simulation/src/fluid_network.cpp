// SPDX-License-Identifier: MIT
#include "netio/scheduler/simulation/fluid_network.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace netio::scheduler::simulation {

namespace {

// Bytes left below this count as sent: the rounding of rate × whole nanoseconds.
constexpr double epsilon_bytes = 1e-6;

void check_capacity(double bytes_per_ns, const char* what) {
  if (!(bytes_per_ns > 0)) {
    throw Error(Errc::invalid_option, fmt::format("fluid network: {} must be > 0, not {}", what, bytes_per_ns));
  }
}

[[noreturn]] void throw_time_runs_backwards(ns::Time now, ns::Time last) {
  throw Error(Errc::invalid_option,
              fmt::format("fluid network: time runs backwards ({} ns after {} ns)", now.count(), last.count()));
}

}  // namespace

FluidNetwork::FluidNetwork(std::uint32_t inputs, std::uint32_t computes, PortSharing sharing)
    : sharing_(sharing), outs_(inputs), ins_(computes) {
  if (inputs == 0 || computes == 0) {
    throw Error(Errc::invalid_option,
                fmt::format("fluid network: needs at least one port of each kind, not {} inputs and {} computes",
                            inputs, computes));
  }
}

void FluidNetwork::set_out_capacity(std::uint32_t input, double bytes_per_ns, ns::Time now) {
  check_capacity(bytes_per_ns, "an out-port's capacity");
  progress_to(now);
  outs_.at(input).capacity = bytes_per_ns;
  allocate();
}

void FluidNetwork::set_in_capacity(std::uint32_t compute, double bytes_per_ns, ns::Time now) {
  check_capacity(bytes_per_ns, "an in-port's capacity");
  progress_to(now);
  ins_.at(compute).capacity = bytes_per_ns;
  allocate();
}

void FluidNetwork::set_transfer_cap(std::uint32_t input, double bytes_per_ns, ns::Time now) {
  check_capacity(bytes_per_ns, "a transfer cap");
  progress_to(now);
  outs_.at(input).transfer_cap = bytes_per_ns;
  allocate();
}

void FluidNetwork::post(std::uint32_t input, std::uint32_t compute, std::uint64_t bytes, std::uint64_t tag,
                        ns::Time now) {
  if (compute >= ins_.size()) {
    throw Error(Errc::invalid_option,
                fmt::format("fluid network: compute node {} out of range (there are {})", compute, ins_.size()));
  }
  progress_to(now);
  Transfer t;
  t.input = input;
  t.compute = compute;
  t.bytes = bytes;
  t.tag = tag;
  t.posted = now;
  outs_.at(input).queue.push_back(t);
  start_heads();
  allocate();
}

std::optional<ns::Time> FluidNetwork::next_finish() const {
  std::optional<ns::Time> next;
  for (const auto& out : outs_) {
    if (!out.head || out.head->rate <= 0) continue;
    ns::Time at = now_;
    if (out.head->remaining > epsilon_bytes && !std::isinf(out.head->rate)) {
      at += ns::Duration{static_cast<ns::Duration::rep>(std::ceil(out.head->remaining / out.head->rate))};
    }
    if (!next || at < *next) next = at;
  }
  return next;
}

std::vector<Transfer> FluidNetwork::advance(ns::Time now) {
  if (now < now_) throw_time_runs_backwards(now, now_);
  std::vector<Transfer> done;
  for (;;) {
    const auto finish = next_finish();
    if (!finish || *finish > now) break;
    progress_to(*finish);
    auto finished = take_finished();
    done.insert(done.end(), finished.begin(), finished.end());
    start_heads();
    allocate();
  }
  progress_to(now);
  return done;
}

double FluidNetwork::current_rate(std::uint32_t input) const {
  const auto& out = outs_.at(input);
  return out.head ? out.head->rate : 0.0;
}

void FluidNetwork::progress_to(ns::Time now) {
  if (now < now_) throw_time_runs_backwards(now, now_);
  const auto dt = static_cast<double>((now - now_).count());
  for (auto& out : outs_) {
    if (!out.head) continue;
    if (std::isinf(out.head->rate)) {
      out.head->remaining = 0;
    } else {
      out.head->remaining = std::max(0.0, out.head->remaining - out.head->rate * dt);
    }
  }
  now_ = now;
}

std::vector<Transfer> FluidNetwork::take_finished() {
  std::vector<Transfer> done;
  for (auto& out : outs_) {
    if (!out.head || out.head->rate <= 0 || out.head->remaining > epsilon_bytes) continue;
    out.head->transfer.finished = now_;
    done.push_back(out.head->transfer);
    out.head.reset();
  }
  return done;
}

void FluidNetwork::start_heads() {
  for (auto& out : outs_) {
    if (out.head || out.queue.empty()) continue;
    Active active;
    active.transfer = out.queue.front();
    active.transfer.started = now_;
    active.remaining = static_cast<double>(active.transfer.bytes);
    active.arrival_order = next_arrival_order_++;
    out.queue.pop_front();
    out.head = active;
  }
}

void FluidNetwork::allocate() {
  // Every transfer on the wire crosses its out-port (it is alone there) and its compute
  // node's in-port: the in-ports decide, each within the caps of its transfers.
  // (at_port_ keeps its vectors from call to call: no allocation per change.)
  at_port_.resize(ins_.size());
  for (auto& heads : at_port_) heads.clear();
  for (auto& out : outs_) {
    if (out.head) at_port_[out.head->transfer.compute].push_back(&*out.head);
  }
  for (std::size_t c = 0; c < ins_.size(); ++c) {
    auto& heads = at_port_[c];
    if (heads.empty()) continue;
    const auto cap = [this](const Active* a) {
      const auto& out = outs_[a->transfer.input];
      return std::min(out.capacity, out.transfer_cap);
    };
    double left = ins_[c].capacity;
    if (sharing_ == PortSharing::fair) {
      // Water-filling: the smallest caps first (equal caps by input, the order they were
      // gathered in), each takes min(cap, an equal share of what is left).
      std::sort(heads.begin(), heads.end(), [&](const Active* a, const Active* b) {
        const double ca = cap(a), cb = cap(b);
        return ca != cb ? ca < cb : a->transfer.input < b->transfer.input;
      });
      for (std::size_t k = 0; k < heads.size(); ++k) {
        const double share = std::isinf(left) ? left : left / static_cast<double>(heads.size() - k);
        heads[k]->rate = std::min(cap(heads[k]), share);
        if (!std::isinf(left)) left = std::max(0.0, left - heads[k]->rate);
      }
    } else {
      std::sort(heads.begin(), heads.end(),
                [](const Active* a, const Active* b) { return a->arrival_order < b->arrival_order; });
      for (auto* head : heads) {
        head->rate = std::min(cap(head), left);
        if (!std::isinf(left)) left = std::max(0.0, left - head->rate);
      }
    }
  }
}

}  // namespace netio::scheduler::simulation
