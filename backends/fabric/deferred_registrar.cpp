// SPDX-License-Identifier: MIT
#include "backends/fabric/deferred_registrar.hpp"

#include "netio/error.hpp"
#include "netio/log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace netio::fabric {

DeferredRegistrar::DeferredRegistrar() {
  pending_.fid.fclass = FI_CLASS_MR;
  pending_.fid.context = this;
}

void DeferredRegistrar::register_buffer(Buffer& buffer) {
  if (FabricMemoryRegistrar* target = default_.load(std::memory_order_acquire)) {
    target->register_buffer(buffer);
    return;
  }
  if (buffer.registration != nullptr) {
    throw Error(Errc::backend_error, fmt::format("fabric: buffer at {} is already registered; deregister it first",
                                                 static_cast<const void*>(buffer.data)));
  }
  buffer.registration = &pending_;
  buffer.desc = nullptr;
}

void DeferredRegistrar::deregister_buffer(Buffer& buffer) noexcept {
  auto* region = static_cast<fid_mr*>(buffer.registration);
  if (region == nullptr || region == &pending_) {
    buffer.registration = nullptr;
    buffer.desc = nullptr;
    return;
  }
  if (known(region->fid.context)) {
    static_cast<FabricMemoryRegistrar*>(region->fid.context)->deregister_buffer(buffer);
    return;
  }
  log(LogLevel::error, "fabric: buffer at {} carries a registration from elsewhere; left alone",
      static_cast<const void*>(buffer.data));
}

void DeferredRegistrar::add_domain_registrar(FabricMemoryRegistrar& registrar) {
  {
    std::lock_guard lock(mutex_);
    registrars_.push_back(&registrar);
  }
  FabricMemoryRegistrar* expected = nullptr;
  default_.compare_exchange_strong(expected, &registrar, std::memory_order_acq_rel);
}

void* DeferredRegistrar::prepare_for_send(Buffer& buffer, FabricMemoryRegistrar& target,
                                          const std::function<std::string()>& context) {
  if (target.owns(buffer)) return buffer.desc;
  if (!target.registration_required() || buffer.size == 0) return nullptr;  // desc is ignored then
  auto* region = static_cast<fid_mr*>(buffer.registration);
  const bool ours = region != nullptr && (region == &pending_ || known(region->fid.context));
  if (!ours) {
    throw Error(Errc::backend_error,
                fmt::format("{}: buffer at {} ({} bytes) is not registered, but this provider needs every buffer "
                            "registered (FI_MR_LOCAL): allocate send buffers from a BufferPool built with the "
                            "socket's registrar()",
                            context(), static_cast<const void*>(buffer.data), buffer.size));
  }
  // Registered with another domain of ours (or none yet): move it to this socket's domain.
  deregister_buffer(buffer);
  target.register_buffer(buffer);
  return buffer.desc;
}

bool DeferredRegistrar::known(const void* registrar) const {
  std::lock_guard lock(mutex_);
  return std::find(registrars_.begin(), registrars_.end(), registrar) != registrars_.end();
}

}  // namespace netio::fabric
