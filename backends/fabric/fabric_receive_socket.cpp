// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_receive_socket.hpp"

#include "backends/fabric/credit_policy.hpp"
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "netio/log.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace netio::fabric {

FabricReceiveSocket::FabricReceiveSocket(EventLoop& loop, std::shared_ptr<Domain> domain, const fi_info& request,
                                         Endpoint local, Endpoint peer, std::shared_ptr<ReceiveBuffers> buffers,
                                         ReplyWindow replies, EstablishedHook hook)
    : loop_(loop),
      local_(std::move(local)),
      peer_(std::move(peer)),
      buffers_(std::move(buffers)),
      hook_(std::move(hook)),
      replies_(replies) {
  // Slots for replies too large for fi_inject: up to 8, fewer when the sender's replies are
  // large (the slots' memory stays near max_reply_slot_memory), at least one.
  constexpr std::size_t line = 64;
  const std::size_t reply_slot_size = (wire::backward_header_size + replies_.max_size + line - 1) / line * line;
  const std::size_t reply_slots =
      replies_.max_size == 0
          ? 0
          : std::clamp<std::size_t>(std::min(replies_.credits, max_reply_slot_memory / reply_slot_size), 1,
                                    max_reply_slots);
  // One credit message and the reply slots in flight; a little room for injected replies and
  // the provider's own sends.
  const FabricEndpoint::Depth depth{4 + reply_slots, buffers_->count()};
  endpoint_ = std::make_unique<FabricEndpoint>(loop_, domain, request, depth, describe(), [this] { drain(); });
  credit_block_ = std::make_unique<RegisteredBlock>(domain, wire::credit_message_size);
  credit_operation_.kind = OperationContext::Kind::credit_send;
  if (replies_.max_size != 0) {
    reply_slot_size_ = reply_slot_size;
    reply_domain_ = domain;  // the block comes with the first reply fi_inject cannot take
    reply_operations_.resize(reply_slots);
    for (std::size_t i = reply_slots; i-- > 0;) {
      reply_operations_[i].kind = OperationContext::Kind::reply_send;
      reply_operations_[i].index = static_cast<std::uint32_t>(i);
      free_reply_slots_.push_back(static_cast<std::uint32_t>(i));
    }
    const std::size_t inject_size = endpoint_->info().tx_attr->inject_size;
    if (inject_size > wire::backward_header_size) {
      inject_scratch_.resize(std::min(inject_size, wire::backward_header_size + replies_.max_size));
    }
    reply_credits_ = replies_.credits;
  }
  returned_.reserve(buffers_->count());
  repost_later_.reserve(buffers_->count());
}

FabricReceiveSocket::~FabricReceiveSocket() { close(); }

std::string FabricReceiveSocket::describe() const {
  return fmt::format("fabric receive socket {} <- {}", local_.to_string(), peer_.to_string());
}

void FabricReceiveSocket::accept(std::span<const std::byte> extra) {
  // Receives first: the peer may send the moment it sees FI_CONNECTED.
  for (std::size_t i = 0; i < buffers_->count(); ++i) {
    if (!post_receive(buffers_->operation(i))) {
      throw Error(Errc::backend_error, fmt::format("{}: the provider refused receive buffer {} of {} (receive "
                                                   "queue full)",
                                                   describe(), i + 1, buffers_->count()));
    }
  }
  accept_data_ = wire::encode_accept({buffers_->buffer_size(), buffers_->count(), {extra.begin(), extra.end()}});
  if (!extra.empty()) {
    // Never cut short by the provider: checked at listen() on the passive endpoint, and here
    // on the endpoint that answers (its limit may differ).
    if (const auto limit = reported_cm_data_size(&endpoint_->ep()->fid)) {
      const fi_info& info = endpoint_->info();
      const char* provider = info.fabric_attr != nullptr ? info.fabric_attr->prov_name : nullptr;
      require_accept_fits(describe(), fmt::format("provider {}", provider != nullptr ? provider : "-"), extra.size(),
                          *limit);
    }
  }
  check(::fi_accept(endpoint_->ep(), accept_data_.data(), accept_data_.size()), describe(), "fi_accept");
  buffers_->attach(endpoint_->shared_driver());
  endpoint_->start();
}

bool FabricReceiveSocket::post_receive(OperationContext& operation) {
  Buffer& buffer = *operation.buffer;
  // Exactly the agreed size, not the (page-rounded) capacity: a larger message is an error.
  const ssize_t rc =
      ::fi_recv(endpoint_->ep(), buffer.data, buffers_->buffer_size(), buffer.desc, 0, operation.as_context());
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
  // The caller owns replies not reported completed again.
  replies_queued_.clear();
  replies_sent_.clear();
  reply_block_.reset();
}

void FabricReceiveSocket::drain() {
  if (closed_) return;
  if (started_) {
    report_replies_sent();
    if (closed_) return;
    deliver_undelivered();
    if (closed_) return;
  }
  if (!endpoint_->closed()) {
    repost_returned();
    if (endpoint_->closed()) return;
    if (!endpoint_->drain_completions(*this, completion_budget)) return;
    if (endpoint_->closed()) return;
    pump_replies();
    if (endpoint_->closed()) return;
    endpoint_->drain_events(*this);
    if (endpoint_->closed()) return;
    if (canceled_.grace_over()) {
      fail(Errc::disconnected,
           fmt::format("{}: connection lost (the provider canceled the posted receives)", describe()));
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
  if (!repost_later_.empty()) endpoint_->driver().kick_after(post_retry_delay);
  send_credits();
}

void FabricReceiveSocket::send_credits() {
  if (!connected_ || credit_in_flight_ || endpoint_->closed()) return;
  if (!should_announce_credits(buffers_->count(), credits_announced_, credits_returned_, received_)) return;
  wire::encode_credits(credit_block_->data(), credits_returned_);
  const ssize_t rc = ::fi_send(endpoint_->ep(), credit_block_->data(), wire::credit_message_size, credit_block_->desc(),
                               0, credit_operation_.as_context());
  if (check_post(
          rc, endpoint_->driver(), "fi_send (credit message)", [this] { return describe(); },
          [this](const std::string& why) { fail(Errc::disconnected, why); }) != PostOutcome::posted) {
    return;
  }
  credit_in_flight_ = true;
  credits_announced_ = credits_returned_;
}

bool FabricReceiveSocket::repost(OperationContext& operation) {
  try {
    if (post_receive(operation)) {
      ++credits_returned_;
      return true;
    }
  } catch (const Error& e) {
    fail(Errc::backend_error, e.what());
    return false;
  }
  repost_later_.push_back(&operation);
  endpoint_->driver().kick_after(post_retry_delay);
  return true;
}

void FabricReceiveSocket::send_reply(Buffer* buffer) {
  if (closed_ || state_ == State::failed || endpoint_->closed()) return;
  if (replies_.max_size == 0) {
    fail_later(Errc::message_too_large,
               fmt::format("{}: a reply of {} bytes, but {} takes no replies (its send socket did not call "
                           "accept_replies())",
                           describe(), buffer->size, peer_.to_string()));
    return;
  }
  if (buffer->size > replies_.max_size) {
    fail_later(Errc::message_too_large, fmt::format("{}: a reply of {} bytes is larger than the {} bytes {} takes",
                                                    describe(), buffer->size, replies_.max_size, peer_.to_string()));
    return;
  }
  replies_queued_.push_back(buffer);
  pump_replies();
}

void FabricReceiveSocket::pump_replies() {
  if (!connected_ || closed_ || state_ == State::failed || endpoint_->closed()) return;
  bool posted = false;
  while (!replies_queued_.empty() && reply_credits_ > 0) {
    Buffer* reply = replies_queued_.front();
    const std::size_t total = wire::backward_header_size + reply->size;
    // Every reply carries the data credits returned so far: a credit message spared.
    const wire::BackwardHeader header{wire::BackwardKind::reply, static_cast<std::uint32_t>(reply->size),
                                      credits_returned_};
    const bool inject = total <= inject_scratch_.size();
    ssize_t rc = 0;
    if (inject) {
      wire::encode_backward_header(inject_scratch_.data(), header);
      if (reply->size != 0) std::memcpy(inject_scratch_.data() + wire::backward_header_size, reply->data, reply->size);
      rc = ::fi_inject(endpoint_->ep(), inject_scratch_.data(), total, 0);
    } else {
      if (free_reply_slots_.empty()) break;  // a send completion frees one
      if (!reply_block_) {
        try {
          reply_block_ = std::make_unique<RegisteredBlock>(reply_domain_, reply_operations_.size() * reply_slot_size_);
        } catch (const std::exception& e) {
          fail_later(Errc::backend_error, fmt::format("{}: no memory for replies: {}", describe(), e.what()));
          return;
        }
      }
      OperationContext& operation = reply_operations_[free_reply_slots_.back()];
      std::byte* slot = reply_block_->data(operation.index * reply_slot_size_);
      wire::encode_backward_header(slot, header);
      if (reply->size != 0) std::memcpy(slot + wire::backward_header_size, reply->data, reply->size);
      rc = ::fi_send(endpoint_->ep(), slot, total, reply_block_->desc(), 0, operation.as_context());
      if (rc == 0) free_reply_slots_.pop_back();
    }
    const auto outcome = check_post(
        rc, endpoint_->driver(), "sending a reply", [this] { return describe(); },
        [this](const std::string& why) { fail_later(Errc::disconnected, why); });
    if (outcome == PostOutcome::queue_full) break;
    if (outcome == PostOutcome::failed) return;
    posted = true;
    credits_announced_ = credits_returned_;
    --reply_credits_;
    ++replies_posted_;
    replies_queued_.pop_front();
    replies_sent_.push_back(reply);
  }
  // Manual-progress providers move the replies when their queues are read; the next drain
  // also reports the replies completed.
  if (posted) endpoint_->driver().kick();
}

void FabricReceiveSocket::report_replies_sent() {
  while (!closed_ && !replies_sent_.empty()) {
    Buffer* reply = replies_sent_.front();
    replies_sent_.pop_front();
    if (callbacks_.on_reply_completed) callbacks_.on_reply_completed(reply);
  }
}

bool FabricReceiveSocket::take_control_data(std::uint64_t data, std::size_t length, bool& is_control) {
  const auto forward = wire::decode_forward_data(data);
  if (replies_.max_size == 0 || !forward || (forward->kind == wire::ForwardKind::control && length != 0)) {
    fail(Errc::protocol_error,
         fmt::format("{}: {} sent a message with remote CQ data {:#x} ({} bytes) that this back-end does not expect{}",
                     describe(), peer_.to_string(), data, length,
                     replies_.max_size == 0 ? " from a sender that takes no replies" : ""));
    return false;
  }
  const std::uint32_t seen = static_cast<std::uint32_t>(reply_credits_seen_ % wire::reply_credit_modulus);
  const std::uint64_t returned = wire::reply_credits_between(seen, forward->reply_credits_returned);
  if (reply_credits_seen_ + returned > replies_posted_) {
    fail(Errc::protocol_error, fmt::format("{}: {} returned {} reply credits, more than the replies sent to it",
                                           describe(), peer_.to_string(), returned));
    return false;
  }
  reply_credits_seen_ += returned;
  reply_credits_ += returned;
  is_control = forward->kind == wire::ForwardKind::control;
  return true;
}

void FabricReceiveSocket::fail_later(Errc code, const std::string& why) {
  log(LogLevel::info, "{}", why);
  if (!pending_disconnect_) pending_disconnect_ = Error(code, why);
  state_ = State::failed;
  endpoint_->close(false);
  endpoint_->driver().kick();
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

void FabricReceiveSocket::on_completion(OperationContext& operation, const CompletionEntry& completion) {
  const std::size_t length = completion.length;
  switch (operation.kind) {
    case OperationContext::Kind::data_receive:
      ++received_;
      if (completion.remote_data) {
        bool is_control = false;
        if (!take_control_data(*completion.remote_data, length, is_control)) return;
        if (is_control) {
          // Never delivered: the receive goes back at once and counts as a returned credit.
          if (!repost(operation)) return;
          send_credits();
          break;
        }
      }
      operation.buffer->size = length;
      buffers_->note_filled(operation.buffer, length);
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
    case OperationContext::Kind::reply_send: free_reply_slots_.push_back(operation.index); break;
    default: log(LogLevel::warn, "{}: completion of an unexpected operation ignored", describe()); break;
  }
}

void FabricReceiveSocket::on_completion_error(const CompletionEntry& error) {
  if (error.operation != nullptr && error.operation->kind == OperationContext::Kind::credit_send) {
    credit_in_flight_ = false;
  }
  if (error.error == FI_ECANCELED) {
    // The provider flushes posted receives when the connection goes down (posting.hpp).
    canceled_.note(endpoint_->driver());
    return;
  }
  if (error.error == FI_ETRUNC) {
    fail(Errc::protocol_error, fmt::format("{}: {} sent a message larger than the {} bytes this socket accepts: {}",
                                           describe(), peer_.to_string(), buffers_->buffer_size(), error.error_text));
    return;
  }
  const bool sending = error.operation != nullptr && error.operation->kind != OperationContext::Kind::data_receive;
  fail(Errc::disconnected, fmt::format("{}: {} {} failed: {}", describe(), sending ? "sending to" : "receiving from",
                                       peer_.to_string(), error.error_text));
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
