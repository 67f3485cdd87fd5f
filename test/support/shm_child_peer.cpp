// SPDX-License-Identifier: MIT
// A shm:// peer in a process of its own, for the tests that kill one side mid-stream or run
// it as another user (shm_backend_test.cpp):
//
//   shm_child_peer send ENDPOINT [UID]    connects a low-latency sender, prints "connected"
//                                         (or "failed: WHY" and exits 1), then sends 1 KiB
//                                         messages until killed
//   shm_child_peer receive NAME [UID]     listens on shm://NAME:0, prints the endpoint it
//                                         bound, then takes messages until killed
//
// With UID the process drops to that user (and group) first: the caller must be root. The
// scheme "shm-trust-root" is shm:// trusting root as well (netio::ShmPeers), for the test
// of an allow-list.
#include <netio/backend/registry.hpp>
#include <netio/backends/shm.hpp>
#include <netio/context.hpp>
#include <netio/low_latency_socket.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s send ENDPOINT [UID] | receive NAME [UID]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  if (argc == 4) {
    const auto id = static_cast<unsigned>(std::stoul(argv[3]));
    if (::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0) {
      std::perror("shm_child_peer: dropping privileges");
      return 2;
    }
  }
  try {
    netio::register_backend("shm-trust-root", netio::shm_backend_factory({{0}, {}}));
    netio::Context context;
    if (mode == "send") {
      netio::LowLatencySendSocket sender(context, netio::Endpoint::parse(argv[2]));
      if (!sender.wait_connected(std::chrono::seconds(10))) {
        const auto failure = sender.failure();
        std::printf("failed: %s\n", failure ? failure->what() : "no connection within 10 s");
        return 1;
      }
      std::printf("connected\n");
      std::fflush(stdout);
      const std::vector<std::byte> message(1024, std::byte{0x5a});
      for (;;) sender.send(message);
    }
    if (mode == "receive") {
      netio::LowLatencyReceiveSocket receiver(context, netio::Endpoint::parse(fmt::format("shm://{}:0", argv[2])),
                                              [](std::span<const std::byte>, const netio::Peer&) {});
      std::printf("%s\n", receiver.local_endpoint().to_string().c_str());
      std::fflush(stdout);
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  } catch (const std::exception& e) {
    std::printf("failed: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "shm_child_peer: unknown mode '%s'\n", mode.c_str());
  return 2;
}
