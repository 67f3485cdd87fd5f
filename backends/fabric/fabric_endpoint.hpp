// SPDX-License-Identifier: MIT
// An active libfabric endpoint (FI_EP_MSG) with its own event queue and completion queue,
// driven by a ProgressDriver. Shared by send and receive sockets, which supply the
// protocol: this class owns the fids, closes them in order (endpoint, then CQ, then EQ)
// and turns queue entries into calls on a Handler.
#pragma once

#include "address.hpp"
#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/fabric_handles.hpp"
#include "backends/fabric/progress_driver.hpp"
#include "backends/fabric/queue_readers.hpp"

#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace netio::fabric {

// A libfabric socket address (FI_SOCKADDR_IN/IN6) as a SocketAddress, if it is one.
std::optional<detail::SocketAddress> socket_address(const void* address, std::size_t length);

// Connection data a provider takes in fi_connect/fi_accept/fi_reject (FI_OPT_CM_DATA_SIZE);
// a conservative guess when the provider does not say.
std::size_t cm_data_size(fid* endpoint) noexcept;
// The same, only when the provider says (nothing when fi_getopt fails or reports 0).
std::optional<std::size_t> reported_cm_data_size(fid* endpoint) noexcept;
// Throws Errc::invalid_option naming `who`, `provider` and the sizes when an accept carrying
// `accept_data` bytes of AcceptDecision::accept_data does not fit in `limit` bytes of
// connection data: cut short, a pre-shared key's answer would fail every peer's check.
void require_accept_fits(std::string_view who, std::string_view provider, std::size_t accept_data, std::size_t limit);

class FabricEndpoint {
 public:
  class Handler {
   public:
    virtual void on_completion(OperationContext& operation, const CompletionEntry& completion) = 0;
    virtual void on_completion_error(const CompletionEntry& error) = 0;
    virtual void on_connection_event(const EventEntry& event) = 0;  // FI_CONNECTED, FI_SHUTDOWN
    virtual void on_connection_error(const EventEntry& error) = 0;

   protected:
    virtual ~Handler() = default;
  };

  // How many operations the endpoint will have outstanding at most, each way.
  struct Depth {
    std::size_t transmit = 0;
    std::size_t receive = 0;
  };

  // Opens the queues and the endpoint for `info` (from fi_getinfo, or a connection request)
  // and enables it, with queues sized for `depth` (within the provider's limits). `drain`
  // is what the driver calls on every wake-up. Throws netio::Error.
  FabricEndpoint(EventLoop& loop, std::shared_ptr<Domain> domain, const fi_info& info, Depth depth, std::string name,
                 std::function<void()> drain);
  ~FabricEndpoint();
  FabricEndpoint(const FabricEndpoint&) = delete;
  FabricEndpoint& operator=(const FabricEndpoint&) = delete;

  // Puts the queues' wait fds into the event loop and schedules a first drain.
  void start();

  // Hands up to `budget` completions to `handler`; false when the budget ran out first
  // (a kick is then pending). Stops early once the endpoint is closed.
  bool drain_completions(Handler& handler, std::size_t budget);
  // Hands every pending connection event to `handler`.
  void drain_events(Handler& handler);

  // Leaves the event loop, disconnects (fi_shutdown) if `graceful`, closes the fids.
  // No handler call after this returns; the driver still answers kicks until stop_driver().
  // Idempotent.
  void close(bool graceful) noexcept;
  void stop_driver() noexcept { driver_->stop(); }
  bool closed() const noexcept { return closed_; }

  fid_ep* ep() const noexcept { return ep_.get(); }
  ProgressDriver& driver() const noexcept { return *driver_; }
  const std::shared_ptr<ProgressDriver>& shared_driver() const noexcept { return driver_; }
  const fi_info& info() const noexcept { return *info_; }
  void rename(std::string name) {
    driver_->rename(name);
    name_ = std::move(name);
  }

  std::optional<detail::SocketAddress> local_address() const;
  std::optional<detail::SocketAddress> peer_address() const;

 private:
  std::shared_ptr<Domain> domain_;
  InfoPtr info_;
  std::string name_;
  std::shared_ptr<ProgressDriver> driver_;
  OpenedQueue<fid_eq> eq_;
  OpenedQueue<fid_cq> cq_;
  FidPtr<fid_ep> ep_;
  EventQueueReader event_reader_;
  CompletionQueueReader completion_reader_;
  bool closed_ = false;
};

}  // namespace netio::fabric
