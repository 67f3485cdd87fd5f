// SPDX-License-Identifier: MIT
// Errors: synchronous calls throw netio::Error, whose code() is compared directly; a bad
// option is Errc::invalid_option naming the option and the value; a timeout while waiting is
// a false or a std::nullopt, and a wait that can never succeed throws the reason.
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <system_error>

int main() {
  using namespace std::chrono_literals;
  netio::Context context;
  netio::HighThroughputReceiveSocket receiver(context, netio::Endpoint::parse("tcp://127.0.0.1:0"));

  // A bad option: the constructor that received it throws, naming the option and the value.
  netio::HighThroughputSendOptions options;
  options.page_size = 3;
  try {
    netio::HighThroughputSendSocket sender(context, receiver.local_endpoint(), options);
    return 1;
  } catch (const netio::Error& e) {
    fmt::print("{}: {}\n", e.code().message(), e.what());
    if (e.code() != netio::Errc::invalid_option) return 1;
  }

  // A timeout is not an error: recv() returns std::nullopt when nothing came in time.
  if (receiver.recv(10ms).has_value()) return 1;

  // A failed system call carries errno's code: the receiver's port is taken.
  try {
    netio::HighThroughputReceiveSocket second(context, receiver.local_endpoint());
    return 1;
  } catch (const netio::Error& e) {
    fmt::print("{}: {}\n", e.code().message(), e.what());
    if (e.code() != std::errc::address_in_use) return 1;
  }

  // Nobody listens at the address: the socket tries again until connect_timeout, then the
  // wait throws the reason (Errc::timeout, naming the address and the attempts).
  netio::Endpoint closed = netio::Endpoint::parse("tcp://127.0.0.1:0");
  {
    netio::HighThroughputReceiveSocket gone(context, closed);
    closed = gone.local_endpoint();
  }
  netio::HighThroughputSendOptions once;
  once.connect_timeout = 200ms;  // default 30 s: a receiver may start after its sender
  netio::HighThroughputSendSocket sender(context, closed, once);
  try {
    const bool connected = sender.wait_connected(5s);  // false only if 5 s passed undecided
    fmt::print("connected: {}\n", connected);
    return 1;
  } catch (const netio::Error& e) {
    fmt::print("{}: {}\n", e.code().message(), e.what());
    return e.code() == netio::Errc::timeout ? 0 : 1;
  }
}
