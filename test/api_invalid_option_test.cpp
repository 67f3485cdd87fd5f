// SPDX-License-Identifier: MIT
// One convention for a bad argument or option (docs/guide/errors.md): netio::Error with
// Errc::invalid_option, whose message names the option and the value.
#include "netio/context.hpp"
#include "netio/emulation.hpp"
#include "netio/error.hpp"
#include "netio/high_throughput_socket.hpp"
#include "netio/low_latency_socket.hpp"
#include "netio/multi_destination_send_socket.hpp"
#include "netio/page_pool.hpp"
#include "netio/scheduled_push/timeslice_sender.hpp"
#include "netio/socket_options.hpp"

#include "support/invalid_option.hpp"

#include <catch2/catch.hpp>

#include <sched.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

using namespace std::chrono_literals;

using netio::test::check_invalid_option;

namespace {

const netio::Endpoint local = netio::Endpoint::parse("tcp://127.0.0.1:0");

}  // namespace

TEST_CASE("a bad connection policy name is Errc::invalid_option naming it", "[api][errors]") {
  check_invalid_option([] { (void)netio::parse_connection_policy("fifo"); }, {"connection policy", "'fifo'"});
}

TEST_CASE("a multi-destination socket without pages is Errc::invalid_option naming the option", "[api][errors]") {
  netio::Context context;
  netio::MultiDestinationSendOptions options;
  options.mode = netio::SendMode::high_throughput;
  options.high_throughput.page_count = 0;
  check_invalid_option([&] { netio::MultiDestinationSendSocket socket(context, options); },
                       {"high_throughput.page_count", "0"});
}

TEST_CASE("a context pinned to no CPU is Errc::invalid_option naming the option and the CPU", "[api][errors]") {
  netio::ContextOptions options;
  options.cpu = -3;
  check_invalid_option([&] { netio::Context context(options); }, {"ContextOptions::cpu", "-3"});
}

TEST_CASE(
    "a context pinned to a CPU outside the process's affinity mask is Errc::invalid_option naming the CPUs it may use",
    "[api][errors][cpu]") {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int outside = 0;
  while (outside < CPU_SETSIZE && CPU_ISSET(outside, &allowed)) ++outside;
  if (outside == CPU_SETSIZE) return;  // every CPU there is may be used: nothing to refuse
  netio::ContextOptions options;
  options.cpu = outside;
  check_invalid_option([&] { netio::Context context(options); },
                       {"ContextOptions::cpu", "CPU " + std::to_string(outside), "may use CPUs"});
}

TEST_CASE("bad socket options are Errc::invalid_option naming the option and the value", "[api][errors]") {
  netio::Context context;
  netio::HighThroughputReceiveSocket receiver(context, local);
  {
    netio::HighThroughputSendOptions options;
    options.page_size = 3;
    check_invalid_option([&] { netio::HighThroughputSendSocket s(context, receiver.local_endpoint(), options); },
                         {"page_size", "3"});
  }
  {
    netio::HighThroughputSendOptions options;
    options.flush_timeout = 0ns;
    check_invalid_option([&] { netio::HighThroughputSendSocket s(context, receiver.local_endpoint(), options); },
                         {"flush_timeout", "0"});
  }
  {
    netio::LowLatencySendOptions options;
    options.buffer_count = 0;
    check_invalid_option([&] { netio::LowLatencySendSocket s(context, receiver.local_endpoint(), options); },
                         {"buffer_count", "0"});
  }
  check_invalid_option(
      [] { netio::PagePool pool(netio::PagePoolOptions{.page_count = 0, .page_size = 4096, .per_connection = 0}); },
      {"page_count 0"});
}

TEST_CASE("a bad emulation spec is Errc::invalid_option quoting it", "[api][errors]") {
  check_invalid_option([] { (void)netio::parse_emulation_spec("delay=sometimes"); }, {"'delay=sometimes'"});
}

TEST_CASE("bad scheduled-push options are Errc::invalid_option naming the option", "[api][errors]") {
  netio::Context context;
  netio::scheduled_push::TimesliceSenderOptions options;
  options.config.input_count = 1;
  options.config.compute_count = 2;
  options.compute_endpoints = {netio::Endpoint::parse("tcp://127.0.0.1:1")};  // one of two
  check_invalid_option([&] { netio::scheduled_push::TimesliceSender sender(context, options); },
                       {"1 compute endpoints", "2 compute nodes"});
}

TEST_CASE("a low-latency receive socket without a handler is Errc::invalid_option", "[api][errors]") {
  netio::Context context;
  check_invalid_option([&] { netio::LowLatencyReceiveSocket socket(context, local, nullptr); }, {"handler"});
}
