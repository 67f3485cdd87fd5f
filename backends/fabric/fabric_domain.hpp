// SPDX-License-Identifier: MIT
// A libfabric fabric + domain pair, the memory registrar that goes with it, and the event
// and completion queues opened on it; plus the cache that shares domains between sockets.
//
// Wait objects: queues are opened with FI_WAIT_FD so that the event loop can sleep on them.
// A provider that cannot do that gets FI_WAIT_NONE queues, which ProgressDriver polls from
// a timer (logged as a warning). NETIO_FABRIC_WAIT=poll forces polling (for tests, and to
// compare); anything else (or unset) means "fd where possible".
#pragma once

#include "backends/fabric/deferred_registrar.hpp"
#include "backends/fabric/fabric_handles.hpp"
#include "backends/fabric/fabric_memory_registrar.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace netio::fabric {

// A queue and whether the event loop can wait for it through a file descriptor.
template <typename T>
struct OpenedQueue {
  FidPtr<T> queue;
  bool has_wait_fd = false;
};

class Domain {
 public:
  // Opens the fabric and domain that `info` names. Throws netio::Error.
  // `spin`: the event loop busy-polls, so completion queues get no wait object (no fd for
  // the provider to signal) and are read on every round of the loop. Event queues (rare
  // connection events) keep their wait fd.
  Domain(const fi_info& info, bool spin);
  ~Domain();
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  fid_fabric* fabric() const noexcept { return fabric_.get(); }
  fid_domain* domain() const noexcept { return domain_.get(); }
  const fi_info& info() const noexcept { return *info_; }
  const std::string& provider() const noexcept { return provider_; }
  // "provider tcp, fabric 127.0.0.1/32, domain lo": for messages.
  const std::string& description() const noexcept { return description_; }
  FabricMemoryRegistrar& registrar() noexcept { return *registrar_; }

  // Whether a fi_info (e.g. of a connection request) lives in this domain.
  bool matches(const fi_info& other) const noexcept;

  OpenedQueue<fid_cq> open_completion_queue(std::size_t size);
  OpenedQueue<fid_eq> open_event_queue(std::size_t size);

 private:
  InfoPtr info_;
  std::string provider_;
  std::string description_;
  bool force_polling_ = false;
  bool spin_ = false;
  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  std::unique_ptr<FabricMemoryRegistrar> registrar_;
};

// The domains of one back-end: sockets on the same provider, fabric and domain share one,
// so buffers registered once serve all of them. Domains live as long as the back-end (and
// any socket or lent receive buffer that still holds one). Loop thread only.
class DomainCache {
 public:
  explicit DomainCache(bool spin) : spin_(spin) {}
  std::shared_ptr<Domain> get(const fi_info& info);
  // What send sockets hand out before their domain is known.
  DeferredRegistrar& deferred_registrar() noexcept { return deferred_registrar_; }

 private:
  bool spin_;
  std::vector<std::shared_ptr<Domain>> domains_;
  DeferredRegistrar deferred_registrar_;  // refers to the domains: declared after them, destroyed first
};

}  // namespace netio::fabric
