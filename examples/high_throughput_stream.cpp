// SPDX-License-Identifier: MIT
// High-throughput sockets: a sender batching many small messages into pages, and a
// receiver taking them one by one with recv() on its own thread.
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  try {
    netio::Context context;
    netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));

    netio::HighThroughputSendOptions options;
    options.page_size = 1 << 20;    // messages are packed into 1 MiB pages...
    options.page_count = 8;         // ...from a pool of 8: a slow receiver blocks send()
    options.flush_timeout = 100ms;  // a partly filled page waits at most this long
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);

    constexpr std::uint64_t count = 100'000;
    std::thread producer([&] {
      for (std::uint64_t i = 0; i < count; ++i) sender.send(std::as_bytes(std::span(&i, 1)));
      // Everything handed to the network (false: not within 10 s).
      if (!sender.flush_and_wait(10s)) throw netio::Error(netio::Errc::timeout, "not sent within 10 s");
    });

    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      auto message = receiver.recv(10s);  // std::nullopt on timeout
      if (!message) throw netio::Error(netio::Errc::timeout, "no message within 10 s");
      std::uint64_t value = 0;
      std::memcpy(&value, message->data(), sizeof value);  // the view lives as long as `message`
      sum += value;
    }
    producer.join();
    const auto stats = sender.stats();
    fmt::print("received {} messages (sum {}), sent in {} pages ({} full, {} by timer)\n", count, sum, stats.pages,
               stats.flushes_full, stats.flushes_timer);
    return sum == count * (count - 1) / 2 ? 0 : 1;
  } catch (const netio::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
