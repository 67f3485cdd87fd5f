// SPDX-License-Identifier: MIT
// Memory: a page pool shared by send sockets, a receive budget shared by receive sockets,
// and a large message sent from the caller's memory (zero copy).
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>
#include <netio/page_pool.hpp>
#include <netio/receive_budget.hpp>

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <vector>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  const auto local = netio::Endpoint::parse("tcp://127.0.0.1:0");

  // Receivers: one budget bounds what both hold for their senders (default: 1 GiB each).
  auto budget = std::make_shared<netio::ReceiveBudget>(64 << 20);
  netio::HighThroughputReceiveOptions receive_options;
  receive_options.shared_budget = budget;
  netio::HighThroughputReceiveSocket a(context, local, receive_options);
  netio::HighThroughputReceiveSocket b(context, local, receive_options);

  // Senders: 8 pages of 256 KiB for both, at most 4 each at once.
  auto pages = std::make_shared<netio::PagePool>(
      netio::PagePoolOptions{.page_count = 8, .page_size = 256 * 1024, .per_connection = 4});
  netio::HighThroughputSendOptions send_options;
  send_options.shared_pages = pages;
  send_options.zero_copy_threshold = 512 * 1024;  // from 512 KiB on, send() lends the message's memory
  netio::HighThroughputSendSocket to_a(context, a.local_endpoint(), send_options);
  netio::HighThroughputSendSocket to_b(context, b.local_endpoint(), send_options);
  if (!to_a.wait_connected(5s) || !to_b.wait_connected(5s)) return 1;

  const std::vector<std::byte> large(4 << 20, std::byte{7});  // 4 MiB: not copied into pages
  const std::vector<std::byte> small(1000, std::byte{8});     // copied
  to_a.send(large);                                           // returns once the back-end has taken the memory
  to_b.send(small);
  to_b.flush();

  const auto from_a = a.recv(5s);
  const auto from_b = b.recv(5s);
  if (!from_a || from_a->size() != large.size() || !from_b || from_b->size() != small.size()) return 1;

  fmt::print("zero-copy messages: {}\n", to_a.stats().zero_copy_messages);
  fmt::print("page pool: {} in use, peak {}, {} bytes allocated\n", pages->pages_in_use(), pages->peak_pages_in_use(),
             pages->bytes_allocated());
  fmt::print("receive budget: {} of {} bytes used, peak {}, {} refusals\n", budget->used(), budget->limit(),
             budget->peak(), budget->refusals());
  return to_a.stats().zero_copy_messages == 1 ? 0 : 1;
}
