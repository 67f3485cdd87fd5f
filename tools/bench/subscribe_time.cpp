// SPDX-License-Identifier: MIT
// subscribe_time: how long a publisher takes to accept subscriptions to many tags, over real
// sockets on loopback in one process (tools/bench/README.md). K subscribers, one after the
// other, each subscribe to the same N tags in one call (the library sends it as requests of
// a few hundred tags); the time of each is from the call until every request is answered,
// so the k-th meets the routes of the k-1 before it. The publisher and the subscribers have
// event loops of their own. With --idle D it then waits D with every subscription in place and
// nothing published, and reports the CPU the process used meanwhile: what the publisher's
// periodic work (drop reports, flush timers) costs with that many routes.
//
//   subscribe_time [-e tcp://127.0.0.1:0] [--tags N] [--subscribers K] [--idle D] [--json]
#include "common/cli_options.hpp"
#include "common/json_writer.hpp"

#include "netio/context.hpp"
#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* tool_name = "subscribe_time";

struct Options {
  std::string endpoint = "tcp://127.0.0.1:0";
  std::size_t tags = 10000;
  std::size_t subscribers = 4;
  std::chrono::nanoseconds idle{0};
  bool json = false;
};

// User and system CPU time of the whole process.
std::chrono::duration<double> cpu_time() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return std::chrono::duration<double>(seconds(usage.ru_utime) + seconds(usage.ru_stime));
}

int run(const Options& o) {
  using namespace netio;
  using Seconds = std::chrono::duration<double>;
  Context publisher_context;
  Context subscriber_context;
  pubsub::PublishOptions publish_options;
  publish_options.max_tags_per_subscriber = std::max(publish_options.max_tags_per_subscriber, o.tags);
  publish_options.connect_timeout = std::chrono::seconds(60);  // a slow build is measured, not failed
  pubsub::PublishSocket publisher(publisher_context, Endpoint::parse(o.endpoint), publish_options);

  std::vector<pubsub::Tag> tags(o.tags);
  for (std::size_t i = 0; i < tags.size(); ++i) tags[i] = i + 1;
  pubsub::SubscribeOptions subscribe_options;
  subscribe_options.ack_timeout = std::chrono::seconds(60);
  std::vector<std::unique_ptr<pubsub::SubscribeSocket>> subscribers;
  std::vector<double> seconds;
  for (std::size_t k = 0; k < o.subscribers; ++k) {
    subscribe_options.identity.name = fmt::format("{}-{}", tool_name, k);
    subscribers.push_back(std::make_unique<pubsub::SubscribeSocket>(subscriber_context, subscribe_options));
    const auto start = std::chrono::steady_clock::now();
    subscribers.back()->subscribe(publisher.local_endpoint(), tags);
    seconds.push_back(Seconds(std::chrono::steady_clock::now() - start).count());
  }
  const auto routes = publisher.stats().subscriptions;
  double total = 0;
  for (const double s : seconds) total += s;
  std::optional<double> idle_cpu_percent;
  if (o.idle.count() > 0) {
    const auto cpu_before = cpu_time();
    const auto before = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(o.idle);
    idle_cpu_percent =
        100.0 * (cpu_time() - cpu_before).count() / Seconds(std::chrono::steady_clock::now() - before).count();
  }
  if (o.json) {
    tools::JsonWriter json;
    json.begin_object().field("endpoint", publisher.local_endpoint().to_string()).field("tags", o.tags);
    json.field("subscribers", o.subscribers).field("routes", routes).key("seconds").begin_array();
    for (const double s : seconds) json.value(s);
    json.end_array().field("total_seconds", total).field("idle_cpu_percent", idle_cpu_percent).end_object();
    fmt::print("{}\n", json.str());
  } else {
    fmt::print("{} subscribers x {} tags on {}: {} routes\n", o.subscribers, o.tags,
               publisher.local_endpoint().to_string(), routes);
    for (std::size_t k = 0; k < seconds.size(); ++k) fmt::print("  subscriber {}: {:.3f} s\n", k + 1, seconds[k]);
    fmt::print("  all: {:.3f} s\n", total);
    if (idle_cpu_percent)
      fmt::print("  idle for {} ms afterwards: {:.2f} % of a core\n", o.idle.count() / 1'000'000, *idle_cpu_percent);
  }
  return routes == o.tags * o.subscribers ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "subscribe_time: the time K subscribers take, one after the other, to subscribe to the same N tags on "
      "one publisher (loopback, one process)",
      tool_name};
  Options o;
  app.add_option("-e,--endpoint", o.endpoint, "The publisher's endpoint (port 0: any free one)")->capture_default_str();
  app.add_option("--tags", o.tags, "Tags each subscriber subscribes to (1..N), in one call")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  app.add_option("--subscribers", o.subscribers, "Subscribers, one after the other")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  netio::tools::add_duration_option(
      app, "--idle", o.idle, "Then wait this long, nothing published, and report the CPU used meanwhile (0: skip)");
  app.add_flag("--json", o.json,
               "Print {\"endpoint\", \"tags\", \"subscribers\", \"routes\", \"seconds\": [one per subscriber], "
               "\"total_seconds\", \"idle_cpu_percent\" (null without --idle)}");
  return netio::tools::parse_and_run(
      app, argc, argv, [] {}, [&] { return run(o); });
}
