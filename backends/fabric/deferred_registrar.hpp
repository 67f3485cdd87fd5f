// SPDX-License-Identifier: MIT
// The registrar a send socket hands out before connect() has chosen its domain.
//
// A send socket learns its domain (provider, NIC) only when connect() resolves the remote
// address, but user-level sockets build their buffer pools as soon as they have the socket.
// This registrar, one per back-end, registers a buffer with the domain opened first (the
// only one on a single-NIC host), or, before any domain exists, marks it "registered,
// domain pending". At send time a socket whose provider needs registered memory
// (FI_MR_LOCAL) and whose domain differs moves the registration to its own domain
// (prepare_for_send), once per buffer. A buffer never seen by any registrar of this
// back-end is refused there: that is a programming error.
// Thread-safe; lives as long as the back-end, like the domains it registers with.
#pragma once

#include "backends/fabric/fabric_memory_registrar.hpp"

#include <rdma/fi_domain.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace netio::fabric {

class DeferredRegistrar final : public MemoryRegistrar {
 public:
  DeferredRegistrar();

  void register_buffer(Buffer& buffer) override;
  void deregister_buffer(Buffer& buffer) noexcept override;

  // Loop thread: a domain of this back-end was opened; the first becomes the default.
  void add_domain_registrar(FabricMemoryRegistrar& registrar);

  // Loop thread: the descriptor to send `buffer` through a socket of `target`'s domain,
  // registering it there first when the provider needs that. Throws netio::Error when the
  // provider needs registered memory and the buffer was never registered with this back-end.
  // `context` names the socket in an error message (called only then).
  void* prepare_for_send(Buffer& buffer, FabricMemoryRegistrar& target, const std::function<std::string()>& context);

 private:
  bool known(const void* registrar) const;

  fid_mr pending_{};  // the "domain pending" mark; never handed to libfabric
  std::atomic<FabricMemoryRegistrar*> default_{nullptr};
  mutable std::mutex mutex_;
  std::vector<FabricMemoryRegistrar*> registrars_;  // guarded by mutex_
};

}  // namespace netio::fabric
