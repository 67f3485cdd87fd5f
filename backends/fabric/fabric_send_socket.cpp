// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_send_socket.hpp"

#include "backends/fabric/credit_policy.hpp"
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "backends/fabric/provider_selection.hpp"
#include "kernel_tcp.hpp"
#include "netio/log.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace netio::fabric {

FabricSendSocket::FabricSendSocket(EventLoop& loop, DomainCache& domains) : loop_(loop), domains_(domains) {}

FabricSendSocket::~FabricSendSocket() { close(); }

std::string FabricSendSocket::describe() const {
  if (local_) return fmt::format("fabric send socket {} -> {}", local_->to_string(), remote_.to_string());
  return fmt::format("fabric send socket -> {}", remote_.to_string());
}

MemoryRegistrar* FabricSendSocket::registrar() noexcept {
  if (domain_) return &domain_->registrar();
  return &domains_.deferred_registrar();
}

bool FabricSendSocket::sends_unregistered_memory() const noexcept {
  return domain_ && !domain_->registrar().registration_required();
}

std::size_t FabricSendSocket::efficient_buffer_size() const noexcept { return efficient_buffer_size_; }

void FabricSendSocket::accept_replies(ReplyWindow window) {
  if (state_ != State::idle) {
    throw Error(Errc::closed, fmt::format("{}: accept_replies() must come before connect()", describe()));
  }
  if (window.max_size != 0) {
    window.max_size = std::min<std::size_t>(window.max_size, wire::max_reply_size);
    window.credits = std::clamp<std::size_t>(window.credits, 1, wire::max_reply_credits);
  }
  reply_window_ = window;
}

void FabricSendSocket::connect(const Endpoint& remote, std::span<const std::byte> hello, Callbacks callbacks) {
  if (state_ != State::idle) {
    throw Error(Errc::closed, fmt::format("{}: connect() may be called only once per socket", describe()));
  }
  remote_ = remote;
  callbacks_ = std::move(callbacks);
  state_ = State::failed;  // until set_up() succeeds
  try {
    set_up(remote, hello);
  } catch (...) {
    close();
    throw;
  }
}

void FabricSendSocket::set_up(const Endpoint& remote, std::span<const std::byte> hello) {
  const InfoPtr info = query_connect_info(remote);
  domain_ = domains_.get(*info);
  const std::size_t depth = std::clamp<std::size_t>(info->tx_attr->size, 1, max_send_operations);
  inject_size_ = info->tx_attr->inject_size;
  if (info->ep_attr->protocol == FI_PROTO_SOCK_TCP) efficient_buffer_size_ = detail::kernel_tcp_write_limit;
  if (replies_taken()) {
    // Every reply and credit message needs a posted receive: as many as the queue holds.
    const std::size_t room = info->rx_attr->size > credit_receives ? info->rx_attr->size - credit_receives : 1;
    reply_window_.credits = std::min(reply_window_.credits, room);
    control_reserve_ = 1;
  }
  const std::size_t receives = credit_receives + (replies_taken() ? reply_window_.credits : 0);
  endpoint_ = std::make_unique<FabricEndpoint>(loop_, domain_, *info, FabricEndpoint::Depth{depth, receives},
                                               describe(), [this] { drain(); });

  connect_data_ = wire::encode_connect(hello, {reply_window_.max_size, reply_window_.credits});
  const std::size_t limit = cm_data_size(&endpoint_->ep()->fid);
  if (connect_data_.size() > limit) {
    const std::size_t overhead = replies_taken() ? wire::connect_replies_overhead : wire::connect_overhead;
    throw Error(Errc::message_too_large,
                fmt::format("{}: a hello of {} bytes{} does not fit the {} bytes of connection data that {} carries "
                            "(at most {} bytes of hello)",
                            describe(), hello.size(), replies_taken() ? " with a reply window" : "", limit,
                            domain_->description(), limit > overhead ? limit - overhead : 0));
  }

  backward_ = std::make_shared<BackwardReceives>(domain_, receives, reply_window_.max_size);
  backward_->attach(endpoint_->shared_driver());
  returned_replies_.reserve(receives);
  for (std::size_t i = 0; i < receives; ++i) post_backward_receive(backward_->operation(i));
  send_operations_.resize(depth);
  free_operations_.reserve(depth);
  for (std::size_t i = depth; i-- > 0;) {
    send_operations_[i].kind = OperationContext::Kind::data_send;
    send_operations_[i].index = static_cast<std::uint32_t>(i);
    free_operations_.push_back(static_cast<std::uint32_t>(i));
  }

  // The endpoint's own copy of the address: it lives as long as the endpoint.
  const int rc = ::fi_connect(endpoint_->ep(), endpoint_->info().dest_addr, connect_data_.data(), connect_data_.size());
  state_ = State::connecting;
  endpoint_->start();
  if (rc != 0) {
    // Some providers (sockets) know at once; report like every other outcome, from the loop.
    pending_failure_ =
        rc == -FI_ECONNREFUSED
            ? Failure{Errc::connection_refused, fmt::format("{}: nobody listens at {} ({})", describe(),
                                                            remote_.to_string(), domain_->description())}
            : Failure{Errc::backend_error, fmt::format("{}: fi_connect failed: {}", describe(), fi_error_text(rc))};
  }
}

void FabricSendSocket::post_backward_receive(OperationContext& operation) {
  const ssize_t rc = ::fi_recv(endpoint_->ep(), backward_->slot(operation.index), backward_->slot_size(),
                               backward_->desc(), 0, operation.as_context());
  if (rc != 0)
    check(static_cast<int>(rc), describe(), "fi_recv (credit message or reply)");  // hot path: no string otherwise
}

void FabricSendSocket::send(Buffer* buffer) {
  if (state_ == State::closed || state_ == State::failed) return;
  // What cannot be sent fails the connection (the contract: send() never throws); buffers
  // queued before the connection is up are checked the same way in pump().
  if (state_ == State::connected && buffer->size > peer_max_buffer_size_) {
    fail_connected(Errc::message_too_large,
                   fmt::format("{}: a buffer of {} bytes is larger than the {} bytes the receiver takes", describe(),
                               buffer->size, peer_max_buffer_size_));
    return;
  }
  if (state_ == State::connected) {
    try {
      // Registers the buffer in this domain if the provider needs it; throws if it cannot.
      domains_.deferred_registrar().prepare_for_send(*buffer, domain_->registrar(), [this] { return describe(); });
    } catch (const Error& e) {
      fail_connected(Errc::backend_error, e.what());
      return;
    }
  }
  queued_.push_back(buffer);
  if (state_ != State::connected) return;
  const std::size_t before = in_flight_.size();
  pump();
  // Manual-progress providers move data only when their queues are read; and the loop
  // must fi_trywait before it sleeps again. One kick serves a whole burst of sends.
  if (state_ == State::connected && in_flight_.size() != before) endpoint_->driver().kick();
}

void FabricSendSocket::pump() {
  if (pumping_) return;
  pumping_ = true;
  // With replies, one credit stays for control messages (the header's comment).
  while (state_ == State::connected && !queued_.empty() && credits_ > control_reserve_ && !free_operations_.empty()) {
    Buffer* buffer = queued_.front();
    if (buffer->size > peer_max_buffer_size_) {
      pumping_ = false;
      fail_connected(Errc::message_too_large,
                     fmt::format("{}: a buffer of {} bytes, queued before the connection was up, is larger than "
                                 "the {} bytes the receiver takes",
                                 describe(), buffer->size, peer_max_buffer_size_));
      return;
    }
    void* desc = nullptr;
    try {
      desc =
          domains_.deferred_registrar().prepare_for_send(*buffer, domain_->registrar(), [this] { return describe(); });
    } catch (const Error& e) {
      pumping_ = false;
      fail_connected(Errc::backend_error, e.what());
      return;
    }
    // A small message with nothing else in flight: fi_inject copies it at once and reports no
    // completion (what fi_pingpong does below 128 bytes), sparing a completion per message.
    const bool inject = buffer->size <= inject_size_ && in_flight_.empty();
    OperationContext& operation = send_operations_[free_operations_.back()];
    ssize_t rc = 0;
    if (replies_taken()) {
      // Every buffer carries the reply credits returned so far: a request returns them for free.
      const std::uint64_t data = wire::encode_forward_data(wire::ForwardKind::data, reply_credits_returned_);
      rc = inject ? ::fi_injectdata(endpoint_->ep(), buffer->data, buffer->size, data, 0)
                  : ::fi_senddata(endpoint_->ep(), buffer->data, buffer->size, desc, data, 0, operation.as_context());
      if (rc == 0) reply_credits_announced_ = reply_credits_returned_;
    } else {
      rc = inject ? ::fi_inject(endpoint_->ep(), buffer->data, buffer->size, 0)
                  : ::fi_send(endpoint_->ep(), buffer->data, buffer->size, desc, 0, operation.as_context());
    }
    const auto outcome = check_post(
        rc, endpoint_->driver(), "fi_send", [this] { return describe(); },
        [this](const std::string& why) {
          pumping_ = false;
          fail_connected(Errc::disconnected, why);
        });
    if (outcome == PostOutcome::queue_full) break;  // a completion or the retry timer goes on
    if (outcome == PostOutcome::failed) return;
    if (inject) {
      injected_.push_back(buffer);
      queued_.pop_front();
      --credits_;
      if (injected_.size() == 1) endpoint_->driver().kick();  // reported from the next drain
      continue;
    }
    free_operations_.pop_back();
    operation.buffer = buffer;
    operation.completed = false;
    in_flight_.push_back(&operation);
    queued_.pop_front();
    --credits_;
  }
  pumping_ = false;
}

void FabricSendSocket::close() noexcept {
  if (state_ == State::closed) return;
  const bool was_connected = state_ == State::connected;
  state_ = State::closed;
  // Callbacks stay (close() may run inside one of them); state_ keeps them from being called.
  if (endpoint_) {
    endpoint_->close(was_connected);
    endpoint_->stop_driver();
  }
  // The caller owns queued and in-flight buffers again; the endpoint no longer reads them.
  queued_.clear();
  injected_.clear();
  in_flight_.clear();
  pending_failure_.reset();
  // Replies lent out stay valid; the block goes when the last comes back.
  if (backward_) backward_->detach();
  backward_.reset();
}

void FabricSendSocket::drain() {
  if (state_ == State::closed) return;
  if (pending_failure_) {
    const Failure failure = std::move(*pending_failure_);
    pending_failure_.reset();
    fail_connect(failure.code, failure.why);
    return;
  }
  report_injected();
  if (state_ == State::connected) {
    repost_returned_replies();
    if (endpoint_->closed()) return;
  }
  if (!endpoint_->drain_completions(*this, completion_budget)) return;
  if (endpoint_->closed()) return;
  endpoint_->drain_events(*this);
  if (endpoint_->closed()) return;
  if (canceled_.grace_over()) {
    fail_connected(Errc::disconnected,
                   fmt::format("{}: connection lost (the provider canceled the posted operations)", describe()));
    return;
  }
  if (state_ == State::connected) pump();
  if (state_ == State::connected) send_reply_credits();
}

void FabricSendSocket::repost_returned_replies() {
  backward_->take_returned(returned_replies_);
  for (const std::uint32_t index : returned_replies_) {
    try {
      post_backward_receive(backward_->operation(index));
    } catch (const Error& e) {
      fail_connected(Errc::disconnected, e.what());
      return;
    }
    ++reply_credits_returned_;
  }
}

void FabricSendSocket::send_reply_credits() {
  if (!replies_taken() || credits_ == 0) return;
  if (!should_return_reply_credits(reply_window_.credits, reply_credits_announced_, reply_credits_returned_,
                                   replies_received_)) {
    return;
  }
  // No payload, and no completion: the receiver re-posts the receive it took at once.
  const std::uint64_t data = wire::encode_forward_data(wire::ForwardKind::control, reply_credits_returned_);
  const ssize_t rc = ::fi_injectdata(endpoint_->ep(), nullptr, 0, data, 0);
  if (check_post(
          rc, endpoint_->driver(), "fi_injectdata (reply credits)", [this] { return describe(); },
          [this](const std::string& why) { fail_connected(Errc::disconnected, why); }) != PostOutcome::posted) {
    return;
  }
  --credits_;
  reply_credits_announced_ = reply_credits_returned_;
  endpoint_->driver().kick();  // manual-progress providers move it when their queues are read
}

void FabricSendSocket::report_injected() {
  while (state_ == State::connected && !injected_.empty()) {
    Buffer* buffer = injected_.front();
    injected_.pop_front();
    if (callbacks_.on_send_completed) callbacks_.on_send_completed(buffer);
  }
}

void FabricSendSocket::complete_in_order() {
  // Injected buffers were sent while nothing was in flight: before anything in flight now.
  report_injected();
  // Providers complete sends in order on one endpoint (FI_ORDER_STRICT); should one not,
  // callers still see buffers in the order sent.
  while (state_ == State::connected && !in_flight_.empty() && in_flight_.front()->completed) {
    OperationContext* operation = in_flight_.front();
    in_flight_.pop_front();
    Buffer* buffer = std::exchange(operation->buffer, nullptr);
    free_operations_.push_back(operation->index);
    if (callbacks_.on_send_completed) callbacks_.on_send_completed(buffer);
  }
}

void FabricSendSocket::on_backward_message(OperationContext& operation, std::size_t length) {
  const auto header = wire::decode_backward(backward_->message(operation.index, length));
  if (!header || header->credits_returned < credits_total_seen_) {
    fail_connected(Errc::protocol_error,
                   fmt::format("{}: {} sent {} bytes that are neither a credit message nor a reply", describe(),
                               remote_.to_string(), length));
    return;
  }
  credits_ += header->credits_returned - credits_total_seen_;
  credits_total_seen_ = header->credits_returned;
  if (header->kind == wire::BackwardKind::credits) {
    try {
      post_backward_receive(operation);
    } catch (const Error& e) {
      fail_connected(Errc::disconnected, e.what());
      return;
    }
    pump();
    return;
  }
  if (!replies_taken()) {
    fail_connected(Errc::protocol_error, fmt::format("{}: {} sent a reply of {} bytes, but this socket takes no "
                                                     "replies (accept_replies() was not called)",
                                                     describe(), remote_.to_string(), header->payload_size));
    return;
  }
  if (header->payload_size > reply_window_.max_size) {
    fail_connected(Errc::protocol_error,
                   fmt::format("{}: {} sent a reply of {} bytes, larger than the {} bytes "
                               "this socket takes",
                               describe(), remote_.to_string(), header->payload_size, reply_window_.max_size));
    return;
  }
  ++replies_received_;
  if (replies_received_ - reply_credits_announced_ > reply_window_.credits) {
    fail_connected(Errc::protocol_error, fmt::format("{}: {} sent more replies than the {} its window allows",
                                                     describe(), remote_.to_string(), reply_window_.credits));
    return;
  }
  pump();  // the header may have brought data credits
  if (state_ != State::connected) return;
  ReceivedBuffer reply(backward_->lend(operation.index, header->payload_size), backward_);
  // Without a handler the reply goes straight back (and its credit with it).
  if (callbacks_.on_reply) callbacks_.on_reply(std::move(reply));
}

void FabricSendSocket::on_completion(OperationContext& operation, const CompletionEntry& completion) {
  switch (operation.kind) {
    case OperationContext::Kind::data_send:
      operation.completed = true;
      complete_in_order();
      break;
    case OperationContext::Kind::backward_receive: on_backward_message(operation, completion.length); break;
    default: log(LogLevel::warn, "{}: completion of an unexpected operation ignored", describe()); break;
  }
}

void FabricSendSocket::on_completion_error(const CompletionEntry& error) {
  if (state_ != State::connected && state_ != State::connecting) return;
  if (error.error == FI_ECANCELED) {
    // Flushed because the connection went down (posting.hpp).
    canceled_.note(endpoint_->driver());
    return;
  }
  const bool data = error.operation != nullptr && error.operation->kind == OperationContext::Kind::data_send;
  if (error.error == FI_ETRUNC && !data) {
    const std::string limit = replies_taken()
                                  ? fmt::format("a reply of {} bytes this socket takes", reply_window_.max_size)
                                  : std::string("a credit message (this socket takes no replies)");
    fail_connected(Errc::protocol_error, fmt::format("{}: {} sent a message larger than {}: {}", describe(),
                                                     remote_.to_string(), limit, error.error_text));
    return;
  }
  const std::string what = data && error.operation->buffer != nullptr
                               ? fmt::format("sending {} bytes", error.operation->buffer->size)
                               : std::string("receiving a credit message or reply");
  const auto why = fmt::format("{}: {} to {} failed: {}", describe(), what, remote_.to_string(), error.error_text);
  if (state_ == State::connecting) {
    fail_connect(Errc::backend_error, why);
  } else {
    fail_connected(Errc::disconnected, why);
  }
}

void FabricSendSocket::on_connection_event(const EventEntry& event) {
  if (event.event == FI_CONNECTED) {
    if (state_ != State::connecting) return;
    const auto accept = wire::decode_accept(event.data);
    if (!accept) {
      fail_connect(Errc::handshake_rejected,
                   fmt::format("{}: {} accepted with connection data this back-end does not understand ({} bytes; "
                               "not a netio fabric listener?)",
                               describe(), remote_.to_string(), event.data.size()));
      return;
    }
    if (accept->receive_credits <= control_reserve_) {
      fail_connect(Errc::protocol_error,
                   fmt::format("{}: {} accepted with {} receive buffers, too few{}", describe(), remote_.to_string(),
                               accept->receive_credits, control_reserve_ != 0 ? " to take replies" : ""));
      return;
    }
    credits_ = accept->receive_credits;
    credits_total_seen_ = 0;
    peer_max_buffer_size_ = static_cast<std::size_t>(accept->max_buffer_size);
    if (const auto address = endpoint_->local_address()) local_ = detail::to_endpoint(*address, remote_);
    endpoint_->rename(describe());
    state_ = State::connected;
    log(LogLevel::debug, "{}: connected ({} credits, buffers up to {} bytes)", describe(), credits_,
        peer_max_buffer_size_);
    if (callbacks_.on_connected) {
      callbacks_.on_connected(ConnectionInfo{remote_, peer_max_buffer_size_, std::move(accept->extra)});
    }
    if (state_ == State::connected) pump();
    return;
  }
  // FI_SHUTDOWN: completions already queued come first.
  endpoint_->drain_completions(*this, std::numeric_limits<std::size_t>::max());
  if (endpoint_->closed()) return;
  if (state_ == State::connecting) {
    fail_connect(Errc::handshake_rejected, fmt::format("{}: {} closed the connection while it was being set up",
                                                       describe(), remote_.to_string()));
  } else if (state_ == State::connected) {
    fail_connected(Errc::disconnected, fmt::format("{}: {} closed the connection", describe(), remote_.to_string()));
  }
}

void FabricSendSocket::on_connection_error(const EventEntry& error) {
  if (state_ == State::connecting) {
    if (error.error == FI_ECONNREFUSED) {
      if (const auto reason = wire::decode_reject(error.data)) {
        fail_connect(Errc::handshake_rejected,
                     fmt::format("{}: {} rejected the connection: {}", describe(), remote_.to_string(),
                                 reason->empty() ? std::string("(no reason given)") : *reason));
      } else {
        fail_connect(Errc::connection_refused, fmt::format("{}: nobody listens at {} ({})", describe(),
                                                           remote_.to_string(), domain_->description()));
      }
      return;
    }
    fail_connect(error.error == FI_ETIMEDOUT ? Errc::timeout : Errc::backend_error,
                 fmt::format("{}: connecting to {} failed: {}", describe(), remote_.to_string(), error.error_text));
    return;
  }
  if (state_ == State::connected) {
    fail_connected(Errc::disconnected,
                   fmt::format("{}: connection to {} lost: {}", describe(), remote_.to_string(), error.error_text));
  }
}

void FabricSendSocket::fail_connect(Errc code, const std::string& why) {
  log(LogLevel::debug, "{}", why);  // the layer above reports it (once)
  auto callback = callbacks_.on_connect_failed;
  close();
  if (callback) callback(Error(code, why));
}

void FabricSendSocket::fail_connected(Errc code, const std::string& why) {
  log(LogLevel::debug, "{}", why);  // the layer above reports it (once)
  auto callback = callbacks_.on_disconnected;
  close();
  if (callback) callback(Error(code, why));
}

}  // namespace netio::fabric
