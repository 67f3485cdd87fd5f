// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_endpoint.hpp"

#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_wire.hpp"
#include "backends/fabric/libfabric_library.hpp"
#include "netio/error.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <cstring>

namespace netio::fabric {
namespace {

// What librdmacm carries in an InfiniBand REQ after libfabric's own header: the smallest
// limit among the providers we know, used when a provider does not report its own.
constexpr std::size_t fallback_cm_data_size = 48;

}  // namespace

std::optional<detail::SocketAddress> socket_address(const void* address, std::size_t length) {
  detail::SocketAddress result;
  if (address == nullptr || length == 0 || length > sizeof result.storage) return std::nullopt;
  std::memcpy(&result.storage, address, length);
  result.length = static_cast<socklen_t>(length);
  if (result.family() != AF_INET && result.family() != AF_INET6) return std::nullopt;
  return result;
}

std::optional<std::size_t> reported_cm_data_size(fid* endpoint) noexcept {
  std::size_t size = 0;
  std::size_t length = sizeof size;
  if (::fi_getopt(endpoint, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &length) != 0 || size == 0) {
    return std::nullopt;
  }
  return size;
}

std::size_t cm_data_size(fid* endpoint) noexcept {
  return reported_cm_data_size(endpoint).value_or(fallback_cm_data_size);
}

void require_accept_fits(std::string_view who, std::string_view provider, std::size_t accept_data, std::size_t limit) {
  const std::size_t needed = wire::accept_size_with(accept_data);
  if (needed <= limit) return;
  throw Error(Errc::invalid_option,
              fmt::format("{}: an accept answering a pre-shared key's challenge needs {} bytes of connection data "
                          "({} of them the answer), and {} carries at most {} (FI_OPT_CM_DATA_SIZE): peers cannot "
                          "authenticate through it; use a provider with more room, or no key",
                          who, needed, accept_data, provider, limit));
}

FabricEndpoint::FabricEndpoint(EventLoop& loop, std::shared_ptr<Domain> domain, const fi_info& info, Depth depth,
                               std::string name, std::function<void()> drain)
    : domain_(std::move(domain)), info_(copy_info(info)), name_(std::move(name)) {
  driver_ = ProgressDriver::create(loop, domain_->fabric(), name_, std::move(drain));
  // Queues no deeper than we use (hardware queues cost memory), within the provider's limits.
  if (depth.transmit != 0 && depth.transmit < info_->tx_attr->size) info_->tx_attr->size = depth.transmit;
  if (depth.receive != 0 && depth.receive < info_->rx_attr->size) info_->rx_attr->size = depth.receive;
  // Room for every operation the endpoint can have outstanding: a CQ must never overrun
  // (verbs cannot even detect it).
  const std::size_t cq_size = info_->tx_attr->size + info_->rx_attr->size;
  eq_ = domain_->open_event_queue(16);
  cq_ = domain_->open_completion_queue(cq_size);
  fid_ep* ep = nullptr;
  check(::fi_endpoint(domain_->domain(), info_.get(), &ep, nullptr), name_, "fi_endpoint");
  ep_.reset(ep);
  check(::fi_ep_bind(ep_.get(), &eq_.queue->fid, 0), name_, "fi_ep_bind (event queue)");
  check(::fi_ep_bind(ep_.get(), &cq_.queue->fid, FI_TRANSMIT | FI_RECV), name_, "fi_ep_bind (completion queue)");
  check(::fi_enable(ep_.get()), name_, "fi_enable");
}

FabricEndpoint::~FabricEndpoint() {
  close(false);
  driver_->stop();
}

void FabricEndpoint::start() {
  driver_->watch(&cq_.queue->fid, cq_.has_wait_fd);
  driver_->watch(&eq_.queue->fid, eq_.has_wait_fd);
  driver_->kick();
}

bool FabricEndpoint::drain_completions(Handler& handler, std::size_t budget) {
  CompletionEntry entry;
  for (std::size_t handled = 0; !closed_; ++handled) {
    if (handled == budget) {
      driver_->kick();
      return false;
    }
    if (!completion_reader_.next(cq_.queue.get(), entry)) return true;
    if (entry.is_error) {
      handler.on_completion_error(entry);
    } else if (entry.operation != nullptr) {
      handler.on_completion(*entry.operation, entry);
    }
  }
  return true;
}

void FabricEndpoint::drain_events(Handler& handler) {
  if (!driver_->events_due()) return;
  EventEntry entry;
  while (!closed_ && event_reader_.next(eq_.queue.get(), entry)) {
    if (entry.is_error) {
      handler.on_connection_error(entry);
    } else if (entry.event == FI_CONNECTED || entry.event == FI_SHUTDOWN) {
      handler.on_connection_event(entry);
    } else {
      if (entry.info != nullptr) libfabric().freeinfo(entry.info);
      log(LogLevel::debug, "{}: ignoring event {} on an active endpoint", name_, entry.event);
    }
  }
}

void FabricEndpoint::close(bool graceful) noexcept {
  if (closed_) return;
  closed_ = true;
  driver_->unwatch();
  if (graceful && ep_) {
    if (const int rc = ::fi_shutdown(ep_.get(), 0); rc != 0 && rc != -FI_ENOTCONN) {
      log(LogLevel::debug, "{}: fi_shutdown: {}", name_, fi_error_text(rc));
    }
  }
  ep_.reset();
  cq_.queue.reset();
  eq_.queue.reset();
}

std::optional<detail::SocketAddress> FabricEndpoint::local_address() const {
  if (!ep_) return std::nullopt;
  sockaddr_storage address{};
  std::size_t length = sizeof address;
  if (::fi_getname(&ep_->fid, &address, &length) != 0) return std::nullopt;
  return socket_address(&address, length);
}

std::optional<detail::SocketAddress> FabricEndpoint::peer_address() const {
  if (!ep_) return std::nullopt;
  sockaddr_storage address{};
  std::size_t length = sizeof address;
  if (::fi_getpeer(ep_.get(), &address, &length) != 0) return std::nullopt;
  return socket_address(&address, length);
}

}  // namespace netio::fabric
