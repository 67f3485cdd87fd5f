// SPDX-License-Identifier: MIT
// Publish/subscribe: a readout publishes under tags; storage takes pages, monitoring a callback.
#include <netio/context.hpp>
#include <netio/pubsub/publish_socket.hpp>
#include <netio/pubsub/subscribe_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace ps = netio::pubsub;

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  ps::PublishOptions publish_options;
  publish_options.identity.name = "readout-1";  // default "HOST:PID"
  ps::PublishSocket readout(context, netio::Endpoint::parse("tcp://127.0.0.1:0"), publish_options);

  // Storage: high-throughput (the default mode); recv() on any thread.
  ps::SubscribeSocket storage(context);
  const std::vector<ps::Tag> links{0x101, 0x102};
  storage.subscribe(readout.local_endpoint(), links);  // one request; returns once acknowledged

  // Monitoring: low-latency; the handler runs on the event-loop thread.
  std::atomic<int> monitored{0};
  ps::SubscribeSocket monitor(context, [&](ps::Tag, std::span<const std::byte>, const netio::Peer&) { ++monitored; });
  monitor.subscribe(readout.local_endpoint(), 0x101, ps::Mode::low_latency);

  // Every message published from here on reaches both subscribers (no slow joiner).
  auto publisher = readout.publisher();  // this thread's handle: the same publish(), cheaper
  for (std::uint32_t i = 0; i < 1000; ++i) publisher.publish(i % 2 ? 0x102 : 0x101, std::as_bytes(std::span(&i, 1)));
  readout.flush();  // partly filled pages go now instead of after flush_timeout

  int stored = 0;
  while (stored < 1000) {
    const std::optional<ps::Publication> m = storage.recv(5s);
    if (!m) return 1;
    if (stored++ == 0) fmt::print("tag {:#x}, {} bytes from {}\n", m->tag(), m->size(), m->publisher().name());
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (monitored < 500 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);

  const ps::PublishStats s = readout.stats();
  fmt::print("published {}, deliveries {}, subscribers {}; monitored {}\n", s.published, s.deliveries, s.subscribers,
             monitored.load());
  return monitored == 500 ? 0 : 1;
}
