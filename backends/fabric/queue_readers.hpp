// SPDX-License-Identifier: MIT
// Reading libfabric event and completion queues, errors included.
#pragma once

#include "backends/fabric/operation_context.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace netio::fabric {

// One entry of an event queue: a connection-management event, or an error entry.
struct EventEntry {
  bool is_error = false;
  std::uint32_t event = 0;          // FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, ...
  fid_t source = nullptr;           // the endpoint the entry is about
  fi_info* info = nullptr;          // FI_CONNREQ only; the reader's caller must free it
  std::span<const std::byte> data;  // connection data, or the error's err_data
  int error = 0;                    // positive fabric errno, errors only
  std::string error_text;           // fi_strerror plus fi_eq_strerror, errors only
};

class EventQueueReader {
 public:
  // Reads the next entry; false when the queue is empty. `data` stays valid until the next call.
  bool next(fid_eq* queue, EventEntry& entry);

 private:
  static constexpr std::size_t max_cm_data = 1024;
  alignas(fi_eq_cm_entry) std::array<std::byte, sizeof(fi_eq_cm_entry) + max_cm_data> storage_{};
  std::array<std::byte, max_cm_data> error_data_{};
};

// A completion, or an error completion.
struct CompletionEntry {
  bool is_error = false;
  OperationContext* operation = nullptr;  // may be null for provider-internal errors
  std::size_t length = 0;                 // bytes received (receives only)
  // Remote CQ data, when the completion's flags have FI_REMOTE_CQ_DATA (receives only;
  // providers leave the field stale otherwise).
  std::optional<std::uint64_t> remote_data;
  int error = 0;           // positive fabric errno, errors only
  std::string error_text;  // fi_strerror plus fi_cq_strerror, errors only
};

class CompletionQueueReader {
 public:
  // Reads the next completion; false when the queue is empty. Reads in batches.
  bool next(fid_cq* queue, CompletionEntry& entry);

 private:
  static constexpr std::size_t batch = 16;
  std::array<fi_cq_data_entry, batch> entries_{};
  std::size_t count_ = 0;
  std::size_t position_ = 0;
};

}  // namespace netio::fabric
