// SPDX-License-Identifier: MIT
// A small DAQ chain with publish/subscribe: a readout component publishes detector-like
// fragments under one tag per link; a monitoring subscriber takes two links in low-latency
// mode (a callback per fragment, on the event-loop thread) while a storage subscriber takes
// every link in high-throughput mode (pages, recv_each() on its own thread).
//
//   ./daq_publish_subscribe                     tcp://127.0.0.1 on a free port
//   ./daq_publish_subscribe fabric://127.0.0.1:0?provider=tcp
#include <netio/backend/event_loop.hpp>
#include <netio/context.hpp>
#include <netio/pubsub/publish_socket.hpp>
#include <netio/pubsub/subscribe_socket.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

namespace {

// A fragment as a front-end link might send it: a header (link, event number, sample count)
// and ADC samples.
struct FragmentHeader {
  std::uint32_t link;
  std::uint32_t samples;
  std::uint64_t event;
};

std::vector<std::byte> make_fragment(std::uint32_t link, std::uint64_t event) {
  const std::uint32_t samples = 16 + static_cast<std::uint32_t>((event * 7 + link) % 48);
  std::vector<std::byte> bytes(sizeof(FragmentHeader) + samples * sizeof(std::uint16_t));
  const FragmentHeader header{link, samples, event};
  std::memcpy(bytes.data(), &header, sizeof header);
  for (std::uint32_t s = 0; s < samples; ++s) {
    const auto adc = static_cast<std::uint16_t>((event * 31 + s * 17 + link) & 0xFFF);  // a 12-bit ADC
    std::memcpy(bytes.data() + sizeof header + s * sizeof adc, &adc, sizeof adc);
  }
  return bytes;
}

FragmentHeader header_of(std::span<const std::byte> fragment) {
  FragmentHeader header{};
  if (fragment.size() >= sizeof header) std::memcpy(&header, fragment.data(), sizeof header);
  return header;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  using netio::pubsub::Mode;
  constexpr std::uint32_t links = 4;  // tags 0x100 .. 0x103
  constexpr std::uint64_t events = 20'000;
  auto tag_of = [](std::uint32_t link) -> netio::pubsub::Tag { return 0x100 + link; };
  try {
    netio::Context context;  // one event-loop thread for all three components

    // The readout: binds and publishes; subscriptions arrive as requests.
    netio::pubsub::PublishOptions readout_options;
    readout_options.identity.name = "readout-1";
    netio::pubsub::PublishSocket readout(context, netio::Endpoint::parse(argc > 1 ? argv[1] : "tcp://127.0.0.1:0"),
                                         readout_options);
    const netio::Endpoint at = readout.local_endpoint();
    fmt::print("readout publishing on {}\n", at.to_string());

    // Monitoring: links 0 and 1, low-latency, a running mean ADC per link on the loop thread.
    std::atomic<std::uint64_t> monitored{0};
    std::map<netio::pubsub::Tag, std::pair<double, std::uint64_t>> adc;  // sum, samples; loop thread only
    netio::pubsub::SubscribeOptions monitor_options;
    monitor_options.identity.name = "monitoring";
    auto on_message = [&](netio::pubsub::Tag tag, std::span<const std::byte> fragment, const netio::Peer&) {
      const auto header = header_of(fragment);
      for (std::uint32_t s = 0; s < header.samples; ++s) {
        std::uint16_t value = 0;
        std::memcpy(&value, fragment.data() + sizeof header + s * sizeof value, sizeof value);
        adc[tag].first += value;
        ++adc[tag].second;
      }
      ++monitored;
    };
    netio::pubsub::SubscribeSocket monitor(context, on_message, monitor_options);
    monitor.subscribe(at, tag_of(0), Mode::low_latency);  // returns once the readout acknowledged
    monitor.subscribe(at, tag_of(1), Mode::low_latency);

    // Storage: every link, high-throughput; checks each link's events arrive in order.
    netio::pubsub::SubscribeOptions storage_options;
    storage_options.identity.name = "storage";
    netio::pubsub::SubscribeSocket storage(context, storage_options);
    for (std::uint32_t link = 0; link < links; ++link) storage.subscribe(at, tag_of(link));
    std::atomic<std::uint64_t> stored_bytes{0};
    std::atomic<std::uint64_t> out_of_order{0};
    std::thread writer([&] {
      std::vector<std::uint64_t> next(links, 0);
      std::uint64_t stored = 0;
      while (stored < links * events) {
        const auto n = storage.recv_each(
            4096, 5s, [&](netio::pubsub::Tag tag, std::span<const std::byte> fragment, const netio::Peer&) {
              const auto header = header_of(fragment);
              if (tag != tag_of(header.link) || header.event != next[header.link]++) ++out_of_order;
              stored_bytes += fragment.size();  // a real writer appends the fragment to a file here
              return true;
            });
        if (n == 0) break;  // nothing for 5 s: give up
        stored += n;
      }
    });

    // Every fragment published from here on reaches both subscribers: no slow joiner. This
    // thread publishes through a Publisher of its own (readout.publish() works too, from any
    // thread, at the cost of a lock per message).
    auto publisher = readout.publisher();
    for (std::uint64_t event = 0; event < events; ++event) {
      for (std::uint32_t link = 0; link < links; ++link) publisher.publish(tag_of(link), make_fragment(link, event));
    }
    readout.flush();  // the last partly filled pages go out now, not at the flush timeout
    writer.join();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (monitored < 2 * events && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);

    const auto stats = readout.stats();
    fmt::print("readout: {} fragments published, {} deliveries, {} data connections\n", stats.published,
               stats.deliveries, stats.connections);
    fmt::print("monitoring: {} fragments (links 0 and 1)\n", monitored.load());
    fmt::print("storage: {} bytes stored, {} out of order\n", stored_bytes.load(), out_of_order.load());
    const bool ok = monitored == 2 * events && out_of_order == 0 && stats.deliveries == (links + 2) * events &&
                    storage.stats().received == links * events;
    context.loop().run_sync([&] {  // the sums live on the loop thread
      for (const auto& [tag, sum] : adc) {
        fmt::print("monitoring: link tag {:#x}: mean ADC {:.1f}\n", tag, sum.first / static_cast<double>(sum.second));
      }
    });
    if (!ok) {
      fmt::print(stderr, "daq_publish_subscribe: something was lost or out of order\n");
      return 1;
    }
    fmt::print("ok\n");
    return 0;
  } catch (const netio::Error& e) {
    fmt::print(stderr, "daq_publish_subscribe: {}\n", e.what());
    return 1;
  }
}
