// SPDX-License-Identifier: MIT
#include "backends/fabric/fabric_memory_registrar.hpp"

#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/fabric_handles.hpp"

#include <fmt/format.h>

namespace netio::fabric {

FabricMemoryRegistrar::FabricMemoryRegistrar(fid_domain* domain, std::uint64_t mr_mode, std::string description)
    : domain_(domain), mr_mode_(mr_mode), description_(std::move(description)) {}

void FabricMemoryRegistrar::register_buffer(Buffer& buffer) {
  if (buffer.registration != nullptr) {
    throw Error(Errc::backend_error, fmt::format("{}: buffer at {} is already registered; deregister it first",
                                                 description_, static_cast<const void*>(buffer.data)));
  }
  buffer.desc = nullptr;
  // fi_mr_reg refuses empty regions; an empty buffer only ever carries zero-byte messages.
  if (buffer.data == nullptr || buffer.capacity == 0) return;
  fid_mr* region = nullptr;
  // The key only matters for RMA, which we do not use; without FI_MR_PROV_KEY it must be
  // unique within the domain. The context marks the region as ours (see owns()).
  const int rc = ::fi_mr_reg(domain_, buffer.data, buffer.capacity, FI_SEND | FI_RECV, 0,
                             next_key_.fetch_add(1, std::memory_order_relaxed), 0, &region, this);
  if (rc != 0) {
    throw call_failed(fmt::format("{}: registering {} bytes at {}", description_, buffer.capacity,
                                  static_cast<const void*>(buffer.data)),
                      "fi_mr_reg", rc);
  }
  buffer.registration = region;
  buffer.desc = ::fi_mr_desc(region);
  live_.fetch_add(1, std::memory_order_relaxed);
}

void FabricMemoryRegistrar::deregister_buffer(Buffer& buffer) noexcept {
  if (buffer.registration != nullptr) {
    close_fid(&static_cast<fid_mr*>(buffer.registration)->fid);
    live_.fetch_sub(1, std::memory_order_relaxed);
  }
  buffer.registration = nullptr;
  buffer.desc = nullptr;
}

bool FabricMemoryRegistrar::owns(const Buffer& buffer) const noexcept {
  const auto* region = static_cast<const fid_mr*>(buffer.registration);
  return region != nullptr && region->fid.fclass == FI_CLASS_MR &&
         region->fid.context == static_cast<const void*>(this);
}

}  // namespace netio::fabric
