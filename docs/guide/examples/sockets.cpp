// SPDX-License-Identifier: MIT
// High-throughput sockets: small messages packed into pages, taken one by one or in batches.
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));

  netio::HighThroughputSendOptions options;
  options.page_size = 256 * 1024;  // default 1 MiB
  options.page_count = 8;          // the pool: page_size × page_count, never more
  options.flush_timeout = 10ms;    // a partly filled page waits at most this long (default 2 s)
  netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
  if (!sender.wait_connected(5s)) return 1;

  constexpr std::uint32_t kMessages = 100'000;
  for (std::uint32_t i = 0; i < kMessages; ++i) {
    sender.send(std::as_bytes(std::span(&i, 1)));  // a copy into the page: no system call
  }
  sender.flush();  // the last, partly filled page goes now

  // One at a time: a Message is a view into its page and keeps the page alive.
  std::optional<netio::Message> first = receiver.recv(5s);
  if (!first || first->size() != sizeof(std::uint32_t)) return 1;
  first.reset();  // hand the page back

  // In batches, for small messages: each view is valid during the call only.
  std::uint32_t next = 1;
  bool in_order = true;
  while (next < kMessages) {
    const auto taken = receiver.recv_each(4096, 5s, [&](std::span<const std::byte> message) {
      std::uint32_t value = 0;
      std::memcpy(&value, message.data(), sizeof value);
      in_order = in_order && value == next++;
      return true;  // false ends the batch after this message
    });
    if (taken == 0) return 1;  // nothing within the timeout
  }

  const netio::SocketStats s = sender.stats();
  fmt::print("{} messages in {} pages ({} full, {} flushed), in order: {}\n", s.messages, s.pages, s.flushes_full,
             s.flushes_explicit + s.flushes_timer, in_order);
  return in_order ? 0 : 1;
}
