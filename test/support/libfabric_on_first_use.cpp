// SPDX-License-Identifier: MIT
// A program of its own, so that nothing ran before it in the process: netio must not load
// libfabric until a fabric:// endpoint is used (backends/fabric/libfabric_library.hpp).
// Sends one message over tcp:// and checks that libfabric is not mapped, then opens a
// fabric:// receive socket and checks that it is, and that the program's own SIGTERM handler
// is still in place (libraries libfabric loads install theirs). Exit 0 when all hold, 1 with
// the reason.
#include "netio/context.hpp"
#include "netio/low_latency_socket.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>
#include <span>
#include <string>

namespace {

bool libfabric_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libfabric.so") != std::string::npos) return true;
  }
  return false;
}

extern "C" void on_sigterm(int) {}

bool own_sigterm_handler() {
  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  return now.sa_handler == &on_sigterm;
}

int fail(const char* why) {
  std::fprintf(stderr, "libfabric_on_first_use: %s\n", why);
  return 1;
}

}  // namespace

int main() {
  if (libfabric_mapped()) return fail("libfabric is mapped before netio did anything");
  struct sigaction handler {};
  handler.sa_handler = &on_sigterm;
  ::sigaction(SIGTERM, &handler, nullptr);
  {
    netio::Context context;
    std::promise<void> received;
    netio::LowLatencyReceiveSocket rx(context, netio::Endpoint::parse("tcp://127.0.0.1:0"),
                                      [&](std::span<const std::byte>, const netio::Peer&) { received.set_value(); });
    netio::LowLatencySendSocket tx(context, rx.local_endpoint());
    const std::byte message[1]{std::byte{42}};
    tx.send(message);
    if (received.get_future().wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      return fail("the tcp:// message did not arrive within 20 s");
    }
    if (libfabric_mapped()) return fail("libfabric was loaded by a program that used tcp:// only");
    netio::LowLatencyReceiveSocket fabric_rx(context, netio::Endpoint::parse("fabric://127.0.0.1:0?provider=tcp"),
                                             [](std::span<const std::byte>, const netio::Peer&) {});
    if (!libfabric_mapped()) return fail("a fabric:// socket is open, but libfabric is not mapped");
    if (!own_sigterm_handler()) return fail("loading libfabric replaced the program's SIGTERM handler");
  }
  std::puts("libfabric_on_first_use: not loaded for tcp://, loaded for fabric://, signal handlers kept");
  return 0;
}
