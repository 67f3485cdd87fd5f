// SPDX-License-Identifier: MIT
#include "closing_senders.hpp"

#include "buffer_sender.hpp"

#include <vector>

namespace netio::detail {

void ClosingSenders::keep(std::shared_ptr<BufferSender> sender) {
  std::lock_guard lock(mutex_);
  const BufferSender* key = sender.get();
  closing_[key] = std::move(sender);
}

std::shared_ptr<BufferSender> ClosingSenders::release(const BufferSender* sender) {
  std::lock_guard lock(mutex_);
  const auto it = closing_.find(sender);
  if (it == closing_.end()) return nullptr;
  auto kept = std::move(it->second);
  closing_.erase(it);
  return kept;
}

void ClosingSenders::finish() noexcept {
  std::vector<std::shared_ptr<BufferSender>> senders;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, sender] : closing_) senders.push_back(std::move(sender));
    closing_.clear();
  }
  for (const auto& sender : senders) sender->end_close_at_stop();
  // The connections are destroyed here, with the back-ends still there.
}

}  // namespace netio::detail
