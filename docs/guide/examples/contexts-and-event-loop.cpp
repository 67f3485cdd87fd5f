// SPDX-License-Identifier: MIT
// The event loop: posted tasks, timers, and what the loop thread may and may not do.
#include <netio/backend/event_loop.hpp>  // Context::loop(): posted tasks and timers
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  netio::ContextOptions options;
  options.busy_poll = false;  // true: the loop spins instead of sleeping (lower latency, one core)
  netio::Context context(options);
  netio::EventLoop& loop = context.loop();

  std::atomic<int> received{0};
  netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                          [&](std::span<const std::byte>, const netio::Peer&) { ++received; });
  netio::LowLatencySendSocket sender(context, receiver.local_endpoint());
  if (!sender.wait_connected(5s)) return 1;  // a user thread may wait

  // post() runs a task on the loop thread later; run_sync() runs it there and waits.
  loop.post([&] { fmt::print("posted task on the loop thread: {}\n", loop.in_loop_thread()); });
  bool refused = false;
  loop.run_sync([&] {
    try {
      (void)sender.wait_sent(1s);  // on the loop thread nothing waits ...
    } catch (const netio::Error& e) {
      refused = e.code() == netio::Errc::would_block;  // ... a blocking call throws at once
    }
  });

  // A periodic timer; its callback runs on the loop thread, so it sends with try_send().
  std::atomic<int> sent{0};
  const auto timer = loop.add_timer(0ms, 5ms, [&] {
    const std::byte tick[1]{std::byte{1}};
    if (sent < 5 && sender.try_send(tick)) ++sent;
  });

  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (received < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  // Cancelled on the loop thread, the timer cannot fire again after this line.
  loop.run_sync([&] { loop.cancel_timer(timer); });
  fmt::print("would_block on the loop thread: {}; ticks received: {}\n", refused, received.load());
  return refused && received == 5 ? 0 : 1;
}
