// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_listen_socket.hpp"

#include "address.hpp"
#include "backends/fabric/fabric_endpoint.hpp"
#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "backends/fabric/libfabric_library.hpp"
#include "backends/fabric/provider_selection.hpp"
#include "netio/log.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

namespace netio::fabric {

FabricListenSocket::FabricListenSocket(EventLoop& loop, DomainCache& domains) : loop_(loop), domains_(domains) {}

FabricListenSocket::~FabricListenSocket() { close(); }

std::string FabricListenSocket::describe() const { return fmt::format("fabric listen socket {}", local_.to_string()); }

void FabricListenSocket::listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) {
  // The hello arrives with the connection request and is answered at once (the provider
  // keeps requests in its own bounded queue); what may wait is an accepted connection that
  // never becomes established. The provider reassembles messages, so progress_timeout has
  // nothing to watch here.
  limits_ = limits;
  if (listening_ || closed_) {
    throw Error(Errc::closed, fmt::format("{}: listen() may be called only once per socket", describe()));
  }
  local_ = local;
  try {
    open(local);
    if (limits_.accept_data_size != 0) require_accept_room(limits_.accept_data_size);
  } catch (...) {
    close();
    throw;
  }
  callbacks_ = std::move(callbacks);
  listening_ = true;
  driver_ = ProgressDriver::create(loop_, domain_->fabric(), describe(), [this] { drain(); });
  driver_->watch(&eq_.queue->fid, eq_.has_wait_fd);
  driver_->kick();
  if (limits_.handshake_timeout > std::chrono::nanoseconds::zero()) {
    const auto period = std::max<std::chrono::nanoseconds>(limits_.handshake_timeout / 2, std::chrono::milliseconds(1));
    expiry_timer_ = loop_.add_timer(period, period, [this] { expire_pending(); });
  }
  log(LogLevel::debug, "{}: listening ({})", describe(), domain_->description());
}

bool FabricListenSocket::allocates_receive_buffers_up_front() const noexcept {
  return !domain_ || (domain_->info().domain_attr->mr_mode & FI_MR_LOCAL) != 0;
}

void FabricListenSocket::open(const Endpoint& local) {
  info_ = query_listen_info(local);
  domain_ = domains_.get(*info_);
  eq_ = domain_->open_event_queue(event_queue_size);
  fid_pep* pep = nullptr;
  check(::fi_passive_ep(domain_->fabric(), info_.get(), &pep, nullptr), describe(), "fi_passive_ep");
  pep_.reset(pep);
  check(::fi_pep_bind(pep_.get(), &eq_.queue->fid, 0), describe(), "fi_pep_bind");
  check(::fi_listen(pep_.get()), describe(), "fi_listen (cannot listen at this address)");
  // Port 0 asked for any free port: report the one the provider bound.
  sockaddr_storage bound{};
  std::size_t length = sizeof bound;
  if (::fi_getname(&pep_->fid, &bound, &length) == 0) {
    if (const auto address = socket_address(&bound, length)) local_ = local.with_port(address->port());
  }
  cm_data_limit_ = cm_data_size(&pep_->fid);
}

void FabricListenSocket::require_accept_room(std::size_t accept_data) {
  // A passive endpoint reports what a connection request carries; the accept goes through
  // the endpoint made for each request, which FabricReceiveSocket::accept() checks again.
  const auto limit = reported_cm_data_size(&pep_->fid);
  if (!limit) {
    log(LogLevel::info,
        "{}: {} does not report how much connection data it carries (FI_OPT_CM_DATA_SIZE); "
        "accepts carry {} bytes",
        describe(), domain_->description(), wire::accept_size_with(accept_data));
    return;
  }
  require_accept_fits(describe(), domain_->description(), accept_data, *limit);
}

void FabricListenSocket::close() noexcept {
  if (closed_) return;
  closed_ = true;
  listening_ = false;
  // Callbacks stay (close() may run inside one of them); closed_ keeps them from being called.
  if (driver_) driver_->stop();
  if (expiry_timer_ != 0) loop_.cancel_timer(std::exchange(expiry_timer_, 0));
  if (!answering_) close_passive_endpoint();
  // Connections not yet established go; those handed over live on. close() may run inside
  // a pending socket's own drain (its hook reached user code): close them all now, but
  // destroy them later, from a fresh loop task.
  for (auto& socket : pending_) socket->close();
  for (auto& socket : discarded_) socket->close();
  if (!pending_.empty() || !discarded_.empty()) {
    auto doomed = std::make_shared<std::vector<std::unique_ptr<FabricReceiveSocket>>>();
    for (auto& socket : pending_) doomed->push_back(std::move(socket));
    for (auto& socket : discarded_) doomed->push_back(std::move(socket));
    pending_.clear();
    pending_since_.clear();
    discarded_.clear();
    try {
      loop_.post([doomed] { doomed->clear(); });
    } catch (...) {
      // Out of memory: destroying them here is the lesser evil.
    }
  }
}

void FabricListenSocket::close_passive_endpoint() noexcept {
  pep_.reset();
  eq_.queue.reset();
}

void FabricListenSocket::drain() {
  discarded_.clear();  // not on the stack any more: their drains have returned
  if (!driver_->events_due()) return;
  EventEntry entry;
  while (!closed_ && reader_.next(eq_.queue.get(), entry)) {
    if (entry.is_error) {
      report(
          Error(Errc::backend_error, fmt::format("{}: a connection request failed: {}", describe(), entry.error_text)));
    } else if (entry.event == FI_CONNREQ) {
      on_request(entry);
    } else {
      if (entry.info != nullptr) libfabric().freeinfo(entry.info);
      log(LogLevel::debug, "{}: event {} ignored", describe(), entry.event);
    }
  }
}

void FabricListenSocket::on_request(const EventEntry& entry) {
  const InfoPtr request(entry.info);  // freed after the answer; the handle goes with the answer
  if (!request) return;
  const auto address = socket_address(request->dest_addr, request->dest_addrlen);
  const Endpoint peer = address ? detail::to_endpoint(*address, local_) : local_.with_host("unknown-peer").with_port(0);

  const auto connect = wire::decode_connect(entry.data);
  if (!connect) {
    const auto why = fmt::format(
        "{}: rejected a connection request from {} with connection data this back-end does "
        "not understand ({} bytes; not a netio fabric socket?)",
        describe(), peer.to_string(), entry.data.size());
    reject(*request, peer, "malformed connection request (not a netio fabric socket?)");
    report(Error(Errc::handshake_rejected, why));
    return;
  }

  AcceptDecision decision;
  answering_ = true;
  try {
    decision = callbacks_.on_request ? callbacks_.on_request(peer, connect->hello)
                                     : AcceptDecision::reject("the listener takes no connections");
  } catch (const std::exception& e) {
    decision = AcceptDecision::reject(fmt::format("the listener failed to decide: {}", e.what()));
  }
  answering_ = false;
  if (closed_) {
    // on_request closed the listener: answer, so that the request does not linger, then go.
    reject(*request, peer, "the listener closed");
    close_passive_endpoint();
    return;
  }
  if (decision.accepted) {
    accept(*request, peer, decision,
           ReplyWindow{decision.reply_size_for(connect->replies.max_size),
                       static_cast<std::size_t>(connect->replies.credits)});
  } else {
    reject(*request, peer, decision.reject_reason);
  }
}

void FabricListenSocket::reject(const fi_info& request, const Endpoint& peer, const std::string& reason) {
  const auto data = wire::encode_reject(reason, cm_data_limit_);
  if (const int rc = ::fi_reject(pep_.get(), request.handle, data.data(), data.size()); rc != 0) {
    log(LogLevel::warn, "{}: rejecting {} failed: {}", describe(), peer.to_string(), fi_error_text(rc));
  } else {
    log(LogLevel::debug, "{}: rejected {}: {}", describe(), peer.to_string(), reason);
  }
}

void FabricListenSocket::accept(const fi_info& request, const Endpoint& peer, const AcceptDecision& decision,
                                ReplyWindow replies) {
  // Never more buffers than the provider's receive queue holds, never fewer than one, and
  // none larger than the provider carries in one message. A sender that takes replies sends
  // control messages (reply credits) into the data receives: one more buffer is posted, which
  // that sender keeps for them (FabricSendSocket).
  const std::size_t reserve = replies.max_size != 0 ? 1 : 0;
  const std::size_t queue = std::max<std::size_t>(request.rx_attr->size, 1 + reserve);
  const std::size_t credits = std::clamp<std::size_t>(decision.receive_credits, 1, queue - reserve);
  const std::size_t buffer_size = std::min<std::size_t>(decision.max_buffer_size, request.ep_attr->max_msg_size);
  if (credits != decision.receive_credits || buffer_size != decision.max_buffer_size) {
    log(LogLevel::info, "{}: connection from {}: {} receive credits of {} bytes asked, {} of {} bytes possible with {}",
        describe(), peer.to_string(), decision.receive_credits, decision.max_buffer_size, credits, buffer_size,
        domain_->description());
  }

  std::shared_ptr<Domain> domain;
  std::shared_ptr<ReceiveBuffers> buffers;
  std::unique_ptr<FabricReceiveSocket> socket;
  try {
    // Requests arrive through the listener's fabric; some providers (sockets) leave the
    // provider name out of them, or name the subnet differently. A request on another
    // device of the same provider (a wildcard listener on verbs) gets that device's domain.
    const bool elsewhere = request.fabric_attr->prov_name != nullptr && request.domain_attr->name != nullptr &&
                           domain_->info().domain_attr->name != nullptr &&
                           std::string_view(request.domain_attr->name) != domain_->info().domain_attr->name;
    domain = elsewhere ? domains_.get(request) : domain_;
    buffers = std::make_shared<ReceiveBuffers>(domain, credits + reserve, buffer_size);
    socket = std::make_unique<FabricReceiveSocket>(
        loop_, domain, request, local_, peer, buffers, replies,
        [this](FabricReceiveSocket& established, const Error* error) { on_established(established, error); });
  } catch (const std::exception& e) {
    reject(request, peer, "the receiver is out of resources");
    report(Error(Errc::backend_error, fmt::format("{}: cannot accept {}: {}", describe(), peer.to_string(), e.what())));
    return;
  }
  try {
    socket->accept(decision.accept_data);
  } catch (const std::exception& e) {
    socket->close();  // the request handle went to the endpoint: the peer sees the close
    report(
        Error(Errc::backend_error, fmt::format("{}: accepting {} failed: {}", describe(), peer.to_string(), e.what())));
    return;
  }
  log(LogLevel::debug,
      "{}: accepted {} ({} receive buffers of {} bytes, replies up to {} bytes, {} credits; request for {}/{}/{}, "
      "served by {})",
      describe(), peer.to_string(), credits + reserve, buffer_size, replies.max_size, replies.credits,
      request.fabric_attr->prov_name != nullptr ? request.fabric_attr->prov_name : "-",
      request.fabric_attr->name != nullptr ? request.fabric_attr->name : "-",
      request.domain_attr->name != nullptr ? request.domain_attr->name : "-", domain->description());
  if (limits_.max_pending_handshakes != 0 && pending_.size() >= limits_.max_pending_handshakes) {
    discard_pending(0, "too many connections waiting to be established; the oldest goes");
  }
  pending_.push_back(std::move(socket));
  pending_since_.push_back(std::chrono::steady_clock::now());
}

void FabricListenSocket::discard_pending(std::size_t index, const char* why) {
  std::unique_ptr<FabricReceiveSocket> owned = std::move(pending_[index]);
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
  pending_since_.erase(pending_since_.begin() + static_cast<std::ptrdiff_t>(index));
  log(LogLevel::debug, "{}: dropping the connection from {}: {}", describe(), owned->peer().to_string(), why);
  owned->close();
  discarded_.push_back(std::move(owned));
  driver_->kick();
}

void FabricListenSocket::expire_pending() {
  if (closed_) return;
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = pending_.size(); i-- > 0;) {
    if (now - pending_since_[i] >= limits_.handshake_timeout) {
      discard_pending(i, "not established within the handshake timeout");
    }
  }
}

void FabricListenSocket::on_established(FabricReceiveSocket& socket, const Error* error) {
  const auto it =
      std::find_if(pending_.begin(), pending_.end(), [&socket](const auto& p) { return p.get() == &socket; });
  if (it == pending_.end()) return;
  std::unique_ptr<FabricReceiveSocket> owned = std::move(*it);
  pending_since_.erase(pending_since_.begin() + (it - pending_.begin()));
  pending_.erase(it);
  if (error != nullptr) {
    // We are inside the socket's drain: close it now, destroy it from a later drain.
    owned->close();
    discarded_.push_back(std::move(owned));
    driver_->kick();
    report(*error);
    return;
  }
  if (!callbacks_.on_accepted) {
    // Nobody to take it: close it (the connector sees a shutdown), destroy it later.
    owned->close();
    discarded_.push_back(std::move(owned));
    driver_->kick();
    return;
  }
  callbacks_.on_accepted(std::move(owned));
}

void FabricListenSocket::report(const Error& error) {
  log(LogLevel::info, "{}", error.what());
  if (callbacks_.on_error) callbacks_.on_error(error);
}

}  // namespace netio::fabric
