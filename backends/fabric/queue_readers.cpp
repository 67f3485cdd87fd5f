// SPDX-License-Identifier: MIT
#include "backends/fabric/queue_readers.hpp"

#include "backends/fabric/fabric_errors.hpp"

#include <rdma/fi_errno.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace netio::fabric {
namespace {

// An entry for a read of a queue that failed itself (`call` returned `rc` < 0), as opposed to
// an error completion or event it read.
template <typename Entry>
bool read_failed(Entry& entry, const char* call, ssize_t rc) {
  entry.is_error = true;
  entry.error = static_cast<int>(-rc);
  entry.error_text = fmt::format("{} failed: {}", call, fi_error_text(static_cast<int>(rc)));
  return true;
}

}  // namespace

bool EventQueueReader::next(fid_eq* queue, EventEntry& entry) {
  entry = EventEntry{};
  std::uint32_t event = 0;
  const ssize_t n = ::fi_eq_read(queue, &event, storage_.data(), storage_.size(), 0);
  if (n == -FI_EAGAIN) return false;
  if (n == -FI_EAVAIL) {
    fi_eq_err_entry error{};
    error.err_data = error_data_.data();
    error.err_data_size = error_data_.size();
    const ssize_t got = ::fi_eq_readerr(queue, &error, 0);
    if (got == -FI_EAGAIN) return false;
    entry.is_error = true;
    if (got < 0) return read_failed(entry, "fi_eq_readerr", got);
    entry.source = error.fid;
    entry.error = error.err;
    entry.data = std::span<const std::byte>(static_cast<const std::byte*>(error.err_data),
                                            std::min(error.err_data_size, error_data_.size()));
    // A rejection's err_data is the peer's reject payload, not provider data to describe.
    const void* provider_data = error.err == FI_ECONNREFUSED ? nullptr : error.err_data;
    char text[256] = {};
    entry.error_text =
        queue_error_text(error.err, error.prov_errno,
                         ::fi_eq_strerror(queue, error.prov_errno, provider_data, text, sizeof text), sizeof text);
    return true;
  }
  if (n < 0) return read_failed(entry, "fi_eq_read", n);
  entry.event = event;
  if (event == FI_CONNREQ || event == FI_CONNECTED || event == FI_SHUTDOWN) {
    const auto* cm = reinterpret_cast<const fi_eq_cm_entry*>(storage_.data());
    entry.source = cm->fid;
    entry.info = cm->info;
    const auto size = static_cast<std::size_t>(n);
    if (size > sizeof(fi_eq_cm_entry)) {
      entry.data = std::span<const std::byte>(storage_.data() + sizeof(fi_eq_cm_entry), size - sizeof(fi_eq_cm_entry));
    }
  } else {
    entry.source = reinterpret_cast<const fi_eq_entry*>(storage_.data())->fid;
  }
  return true;
}

bool CompletionQueueReader::next(fid_cq* queue, CompletionEntry& entry) {
  entry = CompletionEntry{};
  if (position_ < count_) {
    const auto& completion = entries_[position_++];
    entry.operation = OperationContext::from_context(completion.op_context);
    entry.length = completion.len;
    if ((completion.flags & FI_REMOTE_CQ_DATA) != 0) entry.remote_data = completion.data;
    return true;
  }
  position_ = count_ = 0;
  const ssize_t n = ::fi_cq_read(queue, entries_.data(), entries_.size());
  if (n == -FI_EAGAIN) return false;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry error{};
    const ssize_t got = ::fi_cq_readerr(queue, &error, 0);
    if (got == -FI_EAGAIN) return false;
    entry.is_error = true;
    if (got < 0) return read_failed(entry, "fi_cq_readerr", got);
    entry.operation = OperationContext::from_context(error.op_context);
    entry.length = error.len;
    entry.error = error.err;
    char text[256] = {};
    entry.error_text =
        queue_error_text(error.err, error.prov_errno,
                         ::fi_cq_strerror(queue, error.prov_errno, error.err_data, text, sizeof text), sizeof text);
    if (error.err == FI_ETRUNC) entry.error_text += fmt::format(" ({} bytes did not fit)", error.olen);
    return true;
  }
  if (n < 0) return read_failed(entry, "fi_cq_read", n);
  count_ = static_cast<std::size_t>(n);
  position_ = 0;
  return next(queue, entry);
}

}  // namespace netio::fabric
