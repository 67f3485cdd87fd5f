#include "backends/fabric/fabric_receive_socket.hpp"

#include "backends/fabric/credit_policy.hpp"
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "netio/log.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <limits>

namespace netio::fabric {

FabricReceiveSocket::FabricReceiveSocket(EventLoop& loop, std::shared_ptr<Domain> domain, const fi_info& request,
                                         Endpoint local, Endpoint peer, std::shared_ptr<ReceiveBuffers> buffers,
                                         EstablishedHook hook)
    : loop_(loop), local_(std::move(local)), peer_(std::move(peer)), buffers_(std::move(buffers)), hook_(std::move(hook)) {
  // One credit message in flight at a time; a little room for the provider's own sends.
  const FabricEndpoint::Depth depth{4, buffers_->count()};
  endpoint_ = std::make_unique<FabricEndpoint>(loop_, domain, request, depth, describe(), [this] { drain(); });
  credit_block_ = std::make_unique<RegisteredBlock>(std::move(domain), wire::credit_message_size);
  credit_operation_.kind = OperationContext::Kind::credit_send;
  returned_.reserve(buffers_->count());
  repost_later_.reserve(buffers_->count());
}

FabricReceiveSocket::~FabricReceiveSocket() { close(); }

std::string FabricReceiveSocket::describe() const {
  return fmt::format("fabric receive socket {} <- {}", local_.to_string(), peer_.to_string());
}

void FabricReceiveSocket::accept() {
  // Receives first: the peer may send the moment it sees FI_CONNECTED.
  for (std::size_t i = 0; i < buffers_->count(); ++i) {
    if (!post_receive(buffers_->operation(i))) {
      throw Error(Errc::backend_error, fmt::format("{}: the provider refused receive buffer {} of {} (receive "
                                                   "queue full)", describe(), i + 1, buffers_->count()));
    }
  }
  accept_data_ = wire::encode_accept({buffers_->buffer_size(), buffers_->count()});
  check(::fi_accept(endpoint_->ep(), accept_data_.data(), accept_data_.size()), describe(), "fi_accept");
  buffers_->attach(endpoint_->shared_driver());
  endpoint_->start();
}

bool FabricReceiveSocket::post_receive(OperationContext& operation) {
  Buffer& buffer = *operation.buffer;
  // Exactly the agreed size, not the (page-rounded) capacity: a larger message is an error.
  const ssize_t rc = ::fi_recv(endpoint_->ep(), buffer.data, buffers_->buffer_size(), buffer.desc, 0,
                               operation.as_context());
  if (rc == -FI_EAGAIN) return false;
  if (rc != 0) check(static_cast<int>(rc), describe(), "fi_recv");  // describe() only when needed: hot path
  return true;
}

void FabricReceiveSocket::start(Callbacks callbacks) {
  if (closed_) return;
  callbacks_ = std::move(callbacks);
  started_ = true;
  // Deliver what arrived before start() from the loop, not from inside start().
  endpoint_->driver().kick();
}

void FabricReceiveSocket::close() noexcept {
  if (closed_) return;
  closed_ = true;
  // Callbacks stay (close() may run inside one of them); closed_ keeps them from being called.
  hook_ = nullptr;
  // The endpoint object stays (close() may run inside one of its drains); its fids go.
  endpoint_->close(connected_ && state_ != State::failed);
  endpoint_->stop_driver();
  // The provider has let go of every posted buffer now.
  buffers_->detach();
  undelivered_.clear();
  pending_disconnect_.reset();
  credit_block_.reset();
}

void FabricReceiveSocket::drain() {
  if (closed_) return;
  if (started_) {
    deliver_undelivered();
    if (closed_) return;
  }
  if (!endpoint_->closed()) {
    repost_returned();
    if (endpoint_->closed()) return;
    if (!endpoint_->drain_completions(*this, completion_budget)) return;
    if (endpoint_->closed()) return;
    endpoint_->drain_events(*this);
    if (endpoint_->closed()) return;
    if (canceled_at_ && std::chrono::steady_clock::now() - *canceled_at_ >= cancel_grace) {
      fail(Errc::disconnected, fmt::format("{}: connection lost (the provider canceled the posted receives)", describe()));
      return;
    }
  }
  if (started_ && undelivered_.empty() && pending_disconnect_) {
    const Error error = *pending_disconnect_;
    auto callback = callbacks_.on_disconnected;
    close();
    if (callback) callback(error);
  }
}

void FabricReceiveSocket::deliver(Buffer* buffer) {
  buffers_->lend(buffer);
  ReceivedBuffer received(buffer, buffers_);
  // Without a handler the buffer goes straight back (and its credit with it).
  if (callbacks_.on_data) callbacks_.on_data(std::move(received));
}

void FabricReceiveSocket::deliver_undelivered() {
  while (started_ && !undelivered_.empty() && !closed_) {
    Buffer* buffer = undelivered_.front();
    undelivered_.pop_front();
    deliver(buffer);
  }
}

void FabricReceiveSocket::repost_returned() {
  buffers_->take_returned(returned_);
  for (Buffer* buffer : returned_) repost_later_.push_back(&ReceiveBuffers::operation_of(buffer));
  std::size_t posted = 0;
  for (; posted < repost_later_.size(); ++posted) {
    try {
      if (!post_receive(*repost_later_[posted])) break;
    } catch (const Error& e) {
      fail(Errc::backend_error, e.what());
      return;
    }
    ++credits_returned_;
  }
  repost_later_.erase(repost_later_.begin(), repost_later_.begin() + static_cast<std::ptrdiff_t>(posted));
  if (!repost_later_.empty()) endpoint_->driver().kick_after(retry_delay);
  send_credits();
}

void FabricReceiveSocket::send_credits() {
  if (!connected_ || credit_in_flight_ || endpoint_->closed()) return;
  if (!should_announce_credits(buffers_->count(), credits_announced_, credits_returned_, received_)) return;
  wire::encode_credits(credit_block_->data(), credits_returned_);
  const ssize_t rc = ::fi_send(endpoint_->ep(), credit_block_->data(), wire::credit_message_size, credit_block_->desc(),
                               0, credit_operation_.as_context());
  if (rc == -FI_EAGAIN) {
    endpoint_->driver().kick_after(retry_delay);
    return;
  }
  if (rc != 0) {
    fail(Errc::disconnected, call_failed(describe(), "fi_send (credit message)", static_cast<int>(rc)).what());
    return;
  }
  credit_in_flight_ = true;
  credits_announced_ = credits_returned_;
}

void FabricReceiveSocket::fail(Errc code, const std::string& why) {
  const Error error(code, why);
  log(LogLevel::info, "{}", why);
  const bool was_accepting = state_ == State::accepting;
  state_ = State::failed;
  if (was_accepting) {
    auto hook = std::move(hook_);
    hook_ = nullptr;
    endpoint_->close(false);
    if (hook) hook(*this, &error);
    return;
  }
  if (!started_ || !undelivered_.empty()) {
    // Data that arrived intact is delivered first; the failure follows it.
    if (!pending_disconnect_) pending_disconnect_ = error;
    endpoint_->close(false);
    if (started_) endpoint_->driver().kick();
    return;
  }
  auto callback = callbacks_.on_disconnected;
  close();
  if (callback) callback(error);
}

void FabricReceiveSocket::on_completion(OperationContext& operation, std::size_t length) {
  switch (operation.kind) {
    case OperationContext::Kind::data_receive:
      ++received_;
      operation.buffer->size = length;
      if (started_ && undelivered_.empty()) {
        deliver(operation.buffer);
      } else {
        undelivered_.push_back(operation.buffer);
      }
      break;
    case OperationContext::Kind::credit_send:
      credit_in_flight_ = false;
      send_credits();
      break;
    default:
      log(LogLevel::warn, "{}: completion of an unexpected operation ignored", describe());
      break;
  }
}

void FabricReceiveSocket::on_completion_error(const CompletionEntry& error) {
  if (error.operation != nullptr && error.operation->kind == OperationContext::Kind::credit_send) {
    credit_in_flight_ = false;
  }
  if (error.error == FI_ECANCELED) {
    // The provider flushes posted receives when the connection goes down; the reason
    // (FI_SHUTDOWN, usually) follows on the event queue. Wait for it a little.
    if (!canceled_at_) canceled_at_ = std::chrono::steady_clock::now();
    endpoint_->driver().kick_after(cancel_grace);
    return;
  }
  if (error.error == FI_ETRUNC) {
    fail(Errc::protocol_error, fmt::format("{}: {} sent a message larger than the {} bytes this socket accepts: {}",
                                           describe(), peer_.to_string(), buffers_->buffer_size(), error.error_text));
    return;
  }
  fail(Errc::disconnected, fmt::format("{}: receiving from {} failed: {}", describe(), peer_.to_string(), error.error_text));
}

void FabricReceiveSocket::on_connection_event(const EventEntry& event) {
  if (event.event == FI_CONNECTED) {
    if (state_ != State::accepting) return;
    state_ = State::established;
    connected_ = true;
    if (peer_.port == 0) {
      // The request did not say who asked (some providers leave dest_addr out): ask now.
      if (const auto address = endpoint_->peer_address()) {
        peer_ = detail::to_endpoint(*address, local_);
        endpoint_->rename(describe());
      }
    }
    log(LogLevel::debug, "{}: connected ({} receive buffers of {} bytes)", describe(), buffers_->count(),
        buffers_->buffer_size());
    send_credits();
    auto hook = std::move(hook_);
    hook_ = nullptr;
    if (hook) hook(*this, nullptr);
    return;
  }
  // FI_SHUTDOWN. Completions still queued hold data that arrived before it: take them first.
  endpoint_->drain_completions(*this, std::numeric_limits<std::size_t>::max());
  if (endpoint_->closed()) return;
  fail(Errc::disconnected, fmt::format("{}: {} closed the connection", describe(), peer_.to_string()));
}

void FabricReceiveSocket::on_connection_error(const EventEntry& error) {
  fail(state_ == State::accepting ? Errc::backend_error : Errc::disconnected,
       fmt::format("{}: connection with {} failed: {}", describe(), peer_.to_string(), error.error_text));
}

}  // namespace netio::fabric
