// SPDX-License-Identifier: MIT
// Configuration: options are plain structs with defaults; the log goes to stderr at the level
// of NETIO_LOG, or where set_log_sink() routes it. This program prints the main defaults.
#include <netio/context.hpp>
#include <netio/high_throughput_socket.hpp>
#include <netio/log.hpp>
#include <netio/low_latency_socket.hpp>
#include <netio/pubsub/publish_socket.hpp>
#include <netio/pubsub/subscribe_socket.hpp>
#include <netio/scheduled_push/timeslice_receiver.hpp>
#include <netio/scheduled_push/timeslice_sender.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <string_view>

int main() {
  // NETIO_LOG=trace|debug|info|warn|error|off (default warn); set_log_level() overrides it.
  netio::set_log_level(netio::LogLevel::info);
  netio::set_log_sink([](netio::LogLevel level, std::string_view line) {  // any thread: thread-safe
    fmt::print("[my logger] {}: {}\n", netio::to_string(level), line);
  });

  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); };
  const netio::LowLatencySendOptions ll;
  const netio::LowLatencyReceiveOptions llr;
  fmt::print(
      "low latency: buffer_count {}, buffer_size {}, send_timeout {}; max_message_size {}, "
      "receive_credits {}, reply_window {}\n",
      ll.buffer_count, ll.buffer_size, ms(ll.send_timeout), llr.max_message_size, llr.receive_credits,
      llr.reply_window);
  const netio::HighThroughputSendOptions ht;
  const netio::HighThroughputReceiveOptions htr;
  fmt::print(
      "high throughput: page_size {}, page_count {}, flush_timeout {}; max_page_size {}, page_credits {}, "
      "memory_budget {}\n",
      ht.page_size, ht.page_count, ms(ht.flush_timeout), htr.max_page_size, htr.page_credits, htr.memory_budget);
  const netio::AdmissionOptions admission;
  fmt::print("admission: max_connections {}, max_pending_handshakes {}, handshake_timeout {}, progress_timeout {}\n",
             admission.connection_limit(), admission.max_pending_handshakes, ms(admission.handshake_timeout),
             ms(admission.progress_timeout));
  const netio::pubsub::PublishOptions pub;
  const netio::pubsub::SubscribeOptions sub;
  fmt::print("pub/sub: pages {} x {}, flush_timeout {}, ack_timeout {}, resubscribe_interval {}\n",
             pub.pages.page_count, pub.pages.page_size, ms(pub.flush_timeout), ms(sub.ack_timeout),
             ms(sub.resubscribe_interval));
  const netio::scheduled_push::TimesliceReceiverOptions tsr;
  const netio::scheduler::SchedulerConfig config;
  fmt::print("scheduled push: max_contribution_bytes {}, incomplete_timeout {}, timeslices_per_interval {}\n",
             tsr.max_contribution_bytes, ms(tsr.incomplete_timeout), config.timeslices_per_interval);

  // Options are checked where they are used: a CPU that does not exist is Errc::invalid_option.
  netio::ContextOptions options;
  options.cpu = 100000;
  try {
    netio::Context context(options);
    return 1;
  } catch (const netio::Error& e) {
    netio::log(netio::LogLevel::error, "{}", e.what());  // to the sink above
  }
  return 0;
}
