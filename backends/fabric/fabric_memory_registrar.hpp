// SPDX-License-Identifier: MIT
// Memory registration (fi_mr_reg) for one libfabric domain.
//
// Registers a buffer's whole capacity for local send and receive, sets Buffer::desc (what
// data transfers pass to the provider) and Buffer::registration (the struct fid_mr*).
// mr_mode bits: FI_MR_LOCAL makes registration mandatory for every buffer we send or
// receive into (checked at send time); FI_MR_PROV_KEY and FI_MR_VIRT_ADDR only concern
// remote access (RMA), which netio does not use, so keys we request are merely unique;
// FI_MR_ALLOCATED is met because buffers are allocated before they are registered.
// Thread-safe: domains are opened with FI_THREAD_SAFE.
#pragma once

#include "netio/backend/buffer.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace netio::fabric {

class FabricMemoryRegistrar final : public MemoryRegistrar {
 public:
  FabricMemoryRegistrar(fid_domain* domain, std::uint64_t mr_mode, std::string description);

  void register_buffer(Buffer& buffer) override;
  void deregister_buffer(Buffer& buffer) noexcept override;

  // Whether the buffer carries a registration made by this registrar (so valid in its domain).
  bool owns(const Buffer& buffer) const noexcept;
  // Whether the provider needs every local buffer registered (FI_MR_LOCAL).
  bool registration_required() const noexcept { return (mr_mode_ & FI_MR_LOCAL) != 0; }
  // Registrations made and not yet deregistered.
  std::size_t live_registrations() const noexcept { return live_.load(std::memory_order_relaxed); }

 private:
  fid_domain* domain_;
  std::uint64_t mr_mode_;
  std::string description_;
  std::atomic<std::uint64_t> next_key_{1};
  std::atomic<std::size_t> live_{0};
};

}  // namespace netio::fabric
