// SPDX-License-Identifier: MIT
// A passive libfabric endpoint that takes connection requests (FI_CONNREQ) on its own
// event queue, asks on_request about each hello, and answers with fi_accept (through a new
// FabricReceiveSocket, handed over once FI_CONNECTED arrives) or fi_reject (with the
// reason as connection data). Accepted connections wait for FI_CONNECTED at most
// ListenLimits::handshake_timeout, and at most max_pending_handshakes of them at once (a new
// one beyond that drops the oldest).
#pragma once

#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/fabric_receive_socket.hpp"
#include "backends/fabric/progress_driver.hpp"
#include "backends/fabric/queue_readers.hpp"
#include "netio/backend/backend.hpp"

#include <rdma/fi_endpoint.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace netio::fabric {

class FabricListenSocket final : public LowLevelListenSocket {
 public:
  FabricListenSocket(EventLoop& loop, DomainCache& domains);
  ~FabricListenSocket() override;

  void listen(const Endpoint& local, Callbacks callbacks, const ListenLimits& limits) override;
  Endpoint local_endpoint() const override { return local_; }
  // Accepted (fi_accept sent), FI_CONNECTED not seen yet.
  std::size_t establishing() const noexcept override { return pending_.size(); }
  // Posted receive buffers hold memory only as messages fill them (they are mapped, backed
  // page by page), unless the provider pins what is registered (FI_MR_LOCAL: verbs): then
  // every posted buffer is held from the accept.
  bool allocates_receive_buffers_up_front() const noexcept override;
  void close() noexcept override;

 private:
  static constexpr std::size_t event_queue_size = 256;  // connection requests waiting for us

  void open(const Endpoint& local);
  // Throws (naming this socket, the provider and the sizes) when an accept with this much
  // accept data does not fit the provider's connection data.
  void require_accept_room(std::size_t accept_data);
  void drain();
  void on_request(const EventEntry& entry);
  void accept(const fi_info& request, const Endpoint& peer, const AcceptDecision& decision, ReplyWindow replies);
  void reject(const fi_info& request, const Endpoint& peer, const std::string& reason);
  void on_established(FabricReceiveSocket& socket, const Error* error);
  void report(const Error& error);
  // Closes a connection that never became established; destroyed at the next drain.
  void discard_pending(std::size_t index, const char* why);
  void expire_pending();
  void close_passive_endpoint() noexcept;
  std::string describe() const;

  EventLoop& loop_;
  DomainCache& domains_;
  Endpoint local_;
  Callbacks callbacks_;
  std::shared_ptr<Domain> domain_;
  InfoPtr info_;  // some providers (sockets) keep pointers into it: it lives as long as the pep
  std::shared_ptr<ProgressDriver> driver_;
  OpenedQueue<fid_eq> eq_;
  FidPtr<fid_pep> pep_;  // after eq_: closed before it
  EventQueueReader reader_;
  std::size_t cm_data_limit_ = 0;
  ListenLimits limits_;
  std::vector<std::unique_ptr<FabricReceiveSocket>> pending_;         // accepted, not yet connected
  std::vector<std::chrono::steady_clock::time_point> pending_since_;  // beside pending_
  EventLoop::TimerId expiry_timer_ = 0;
  std::vector<std::unique_ptr<FabricReceiveSocket>> discarded_;  // failed; destroyed at the next drain
  bool listening_ = false;
  bool closed_ = false;
  bool answering_ = false;  // inside on_request: close() leaves the pep to us
};

}  // namespace netio::fabric
