// SPDX-License-Identifier: MIT
// A subscriber in a process of its own, for the test of a subscriber that dies mid-stream:
//
//   pubsub_child_subscriber PUBLISHER_ENDPOINT TAG
//
// Subscribes (high-throughput), prints "subscribed" on stdout once acknowledged, then takes
// messages until killed. Exit status 1 when the subscription fails.
#include <netio/context.hpp>
#include <netio/pubsub/subscribe_socket.hpp>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PUBLISHER_ENDPOINT TAG\n", argv[0]);
    return 2;
  }
  try {
    netio::Context context;
    netio::pubsub::SubscribeOptions options;
    options.identity.name = "child";
    netio::pubsub::SubscribeSocket subscriber(context, options);
    subscriber.subscribe(netio::Endpoint::parse(argv[1]), std::stoull(argv[2]));
    std::printf("subscribed\n");
    std::fflush(stdout);
    for (;;) subscriber.recv(std::chrono::seconds(1));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pubsub_child_subscriber: %s\n", e.what());
    return 1;
  }
}
