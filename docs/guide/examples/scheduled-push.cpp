// SPDX-License-Identifier: MIT
// Scheduled push: 2 input nodes push a contribution per time-slice, 2 compute nodes build
// complete time-slices; DFS, with a DDE replica on compute node 0. One Context per node.
#include <netio/context.hpp>
#include <netio/scheduled_push/timeslice_receiver.hpp>
#include <netio/scheduled_push/timeslice_sender.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace sp = netio::scheduled_push;
namespace ns = netio::scheduler;

int main() {
  using namespace std::chrono_literals;
  ns::SchedulerConfig config;  // equal on every node
  config.input_count = 2;
  config.compute_count = 2;
  config.timeslices_per_interval = 20;  // default: 10,000 rounded down to whole rounds; small intervals for a short run
  config.history_length = 4;            // default 10: intervals the clocks' drift median looks back on
  constexpr ns::TimesliceIndex kTimeslices = 1000;

  std::vector<std::unique_ptr<netio::Context>> contexts;
  std::atomic<std::uint64_t> built{0};
  std::vector<std::unique_ptr<sp::TimesliceReceiver>> computes;
  for (ns::ComputeIndex c = 0; c < config.compute_count; ++c) {
    sp::TimesliceReceiverOptions o;
    o.config = config;
    o.compute = c;
    o.max_contribution_bytes = 1024;
    o.credits_per_input = 16;  // receive buffer: 16 × 2 inputs × 1 KiB
    o.run_dde = c == 0;
    auto& context = *contexts.emplace_back(std::make_unique<netio::Context>());
    computes.push_back(std::make_unique<sp::TimesliceReceiver>(
        context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
        [&](const sp::TimesliceView& ts) { built += ts.complete ? 1 : 0; }, o));  // loop thread; views valid now only
  }
  std::vector<std::unique_ptr<sp::TimesliceSender>> inputs;
  for (ns::InputIndex i = 0; i < config.input_count; ++i) {
    sp::TimesliceSenderOptions o;
    o.config = config;
    o.mode = ns::Mode::dfs;  // or best_effort (no DDE)
    o.input = i;
    o.max_contribution_bytes = 1024;
    for (const auto& r : computes) o.compute_endpoints.push_back(r->local_endpoint());
    o.dde_endpoints = {*computes[0]->dde_endpoint()};
    inputs.push_back(
        std::make_unique<sp::TimesliceSender>(*contexts.emplace_back(std::make_unique<netio::Context>()), o));
  }

  const std::vector<std::byte> contribution(1024, std::byte{1});
  for (ns::TimesliceIndex t = 0; t < kTimeslices; ++t) {
    for (auto& input : inputs) input->push(t, contribution);  // copied; waits while the queue is full
  }
  bool finished = true;
  for (auto& input : inputs) input->finish();
  for (auto& input : inputs) finished = input->wait_finished(30s) && finished;
  fmt::print("{} time-slices built; input 0 took {} proposals\n", built.load(), inputs[0]->stats().proposals_taken);
  inputs.clear();
  computes.clear();  // before their contexts
  return finished && built == kTimeslices ? 0 : 1;
}
