// SPDX-License-Identifier: MIT
// The receives a FabricSendSocket keeps posted for what its receiver sends back: credit
// messages and replies (fabric_wire.hpp), all in one registered block of equal slots, since
// the provider fills posted receives in order whatever arrives.
//
// A slot that took a credit message is re-posted at once. A slot that took a reply is lent
// to the user as a ReceivedBuffer whose bytes are the payload behind the header; given back
// (on any thread), it is queued and the socket's progress driver is kicked, and the loop
// thread re-posts it and owes the replier a reply credit. Shared ownership keeps the block
// alive while any reply is lent out: after the socket closed, the block goes (deregistered)
// when the last reply comes back, on whatever thread gives it back.
#pragma once

#include "backends/fabric/fabric_domain.hpp"
#include "backends/fabric/operation_context.hpp"
#include "backends/fabric/progress_driver.hpp"
#include "backends/fabric/registered_block.hpp"
#include "netio/backend/backend.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace netio::fabric {

class BackwardReceives final : public ReceiveBufferOwner {
 public:
  // `count` slots, each taking a header and up to `max_payload` bytes. Throws netio::Error
  // (registration) or std::bad_alloc.
  BackwardReceives(std::shared_ptr<Domain> domain, std::size_t count, std::size_t max_payload);
  ~BackwardReceives() override = default;
  BackwardReceives(const BackwardReceives&) = delete;
  BackwardReceives& operator=(const BackwardReceives&) = delete;

  std::size_t count() const noexcept { return slots_.size(); }
  std::size_t slot_size() const noexcept { return slot_size_; }
  std::byte* slot(std::size_t index) noexcept { return block_.data(index * slot_size_); }
  void* desc() const noexcept { return block_.desc(); }
  OperationContext& operation(std::size_t index) noexcept { return slots_[index].operation; }
  // The message a completion of slot `index` delivered (`length` bytes, within the slot).
  std::span<const std::byte> message(std::size_t index, std::size_t length) noexcept {
    return {slot(index), std::min(length, slot_size_)};
  }

  // Loop thread: kick `driver` whenever a reply comes back.
  void attach(std::shared_ptr<ProgressDriver> driver);
  // Loop thread: lends slot `index`, holding a reply of `payload_size` bytes behind its
  // header; the Buffer must come back through give_back.
  Buffer* lend(std::size_t index, std::size_t payload_size) noexcept;
  // Any thread.
  void give_back(Buffer* buffer) noexcept override;
  // Loop thread: the indices of slots given back since the last call, into `out`.
  void take_returned(std::vector<std::uint32_t>& out);
  // Loop thread, once the endpoint's fids are closed: replies given back later are dropped.
  void detach() noexcept;

 private:
  struct Slot {
    Buffer buffer;  // the payload part of the slot, while lent
    OperationContext operation;
  };

  std::size_t slot_size_;
  RegisteredBlock block_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::shared_ptr<ProgressDriver> driver_;  // guarded by mutex_; empty once detached
  std::vector<std::uint32_t> returned_;     // guarded by mutex_
};

}  // namespace netio::fabric
