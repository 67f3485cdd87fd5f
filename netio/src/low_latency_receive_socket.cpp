// SPDX-License-Identifier: MIT
#include "netio/low_latency_socket.hpp"

#include "budget_charge.hpp"
#include "current_exception.hpp"
#include "introduction.hpp"
#include "netio/log.hpp"
#include "receive_connections.hpp"
#include "socket_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace netio {

class LowLatencyReceiveSocket::Impl {
 public:
  Impl(Context& context, const Endpoint& local, Handler handler, const LowLatencyReceiveOptions& options)
      : handler_(std::move(handler)),
        options_(options),
        budget_(detail::budget_from(options.shared_budget, options.memory_budget)),
        connections_(context, local, detail::SocketKind::low_latency_send, "a low-latency receive socket", callbacks(),
                     options.events, stats_, options.reply_window, budget_,
                     /*reassembly_buffer=*/false, options.admission) {}

  detail::ReceiveConnections::Callbacks callbacks() {
    detail::ReceiveConnections::Callbacks c;
    c.decide = [this](const detail::Hello&) {
      // The introduction travels as a buffer too: room for it whatever the message limit.
      return AcceptDecision::accept(std::max(options_.max_message_size, detail::max_introduction_size),
                                    options_.receive_credits);
    };
    c.on_data = [this](const std::shared_ptr<const detail::PeerState>& state, ReceivedBuffer buffer) {
      const auto bytes = buffer.bytes();
      if (bytes.size() > options_.max_message_size) {
        connections_.drop(state->connection, fmt::format("a {}-byte message, more than the {} bytes agreed",
                                                         bytes.size(), options_.max_message_size));
        return;
      }
      // Counted on the loop thread only: no read-modify-writes needed.
      stats_.add_message_single_writer(bytes.size());
      auto& pages = stats_.pages();
      pages.store(pages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      try {
        handler_(bytes, Peer(state));
      } catch (...) {  // the connection stays; the message counts as delivered
        log(LogLevel::error, "receive socket {}: the message handler threw on a message from {}: {}",
            connections_.local_endpoint().to_string(), state->address.to_string(), detail::current_exception_text());
      }
    };  // the buffer goes back to the back-end here: the view was valid during the call only
    c.on_disconnected = [](std::uint64_t, const Error&) {};
    return c;
  }

  Handler handler_;
  LowLatencyReceiveOptions options_;
  StatsCounters stats_;
  std::shared_ptr<ReceiveBudget> budget_;
  detail::ReceiveConnections connections_;
  MetricsRegistry::Registration metrics_;  // last: removed before anything it reads goes
};

static LowLatencyReceiveSocket::Handler required(LowLatencyReceiveSocket::Handler handler) {
  if (!handler) throw Error(Errc::invalid_option, "LowLatencyReceiveSocket: the message handler is empty");
  return handler;
}

LowLatencyReceiveSocket::LowLatencyReceiveSocket(Context& context, const Endpoint& local, Handler handler,
                                                 LowLatencyReceiveOptions options)
    : impl_(std::make_shared<Impl>(context, local, required(std::move(handler)), options)) {
  impl_->metrics_ = detail::add_socket_metrics(
      context, "low_latency_receive", local_endpoint().to_string(), impl_->stats_,
      detail::ReceiveGauges{impl_->budget_, options.shared_budget != nullptr, impl_->connections_.replies_queued()});
}

LowLatencyReceiveSocket::~LowLatencyReceiveSocket() {
  EventLoop& loop = impl_->connections_.loop();
  if (!loop.in_loop_thread()) return;  // ~Impl closes on the loop thread and waits for it
  // Possibly inside this socket's own handler, or a back-end callback of one of its
  // connections: stop every callback now, free them (the handler among them) in a task.
  impl_->connections_.close();
  loop.post([impl = std::move(impl_)] {});
}

Endpoint LowLatencyReceiveSocket::local_endpoint() const { return impl_->connections_.local_endpoint(); }
SocketStats LowLatencyReceiveSocket::stats() const noexcept { return impl_->stats_.snapshot(); }
const ReceiveBudget& LowLatencyReceiveSocket::memory_budget() const noexcept { return *impl_->budget_; }

}  // namespace netio
