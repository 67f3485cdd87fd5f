// SPDX-License-Identifier: MIT
// Uses the installed DFS engines alone (netio::scheduler), without the sockets library.
#include <netio/scheduler/control_messages.hpp>
#include <netio/scheduler/input_engine.hpp>

int main() {
  netio::scheduler::SchedulerConfig config;
  config.input_count = 2;
  config.compute_count = 2;
  netio::scheduler::InputEngine ie(config, 1);
  const auto decision = ie.next_send(std::chrono::nanoseconds{0});
  const auto bytes = netio::scheduler::encode(netio::scheduler::ProposalRequest{1, 2});
  const auto request = netio::scheduler::decode_proposal_request(bytes);
  return decision.timeslice == 1 && request.interval == 2 ? 0 : 1;
}
