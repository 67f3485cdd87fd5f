// SPDX-License-Identifier: MIT
// The per-operation context handed to libfabric with every send and receive.
//
// Providers with FI_CONTEXT / FI_CONTEXT2 mode use the memory behind the context pointer
// as scratch space until the operation completes, so every posted operation gets one of
// these, owned by its socket and never on the stack; the completion hands it back, which
// tells us what finished.
#pragma once

#include "netio/backend/buffer.hpp"

#include <rdma/fabric.h>

#include <cstdint>
#include <type_traits>

namespace netio::fabric {

struct OperationContext {
  enum class Kind : std::uint8_t { data_send, data_receive, credit_send, backward_receive, reply_send };

  fi_context2 provider_context{};  // must stay first: its address is the context pointer
  Kind kind = Kind::data_send;
  bool completed = false;
  std::uint32_t index = 0;  // the slot within its owner
  Buffer* buffer = nullptr;

  void* as_context() noexcept { return this; }
  static OperationContext* from_context(void* context) noexcept { return static_cast<OperationContext*>(context); }
};

static_assert(std::is_standard_layout_v<OperationContext>, "the provider context must sit at offset 0");

}  // namespace netio::fabric
