#include "closing_senders.hpp"

#include "buffer_sender.hpp"

#include <map>
#include <mutex>
#include <vector>

namespace netio::detail {
namespace {

// Keyed by loop (one per Context), so that finish_closing() ends only its own context's.
struct Registry {
  std::mutex mutex;
  std::map<const EventLoop*, std::map<const BufferSender*, std::shared_ptr<BufferSender>>> closing;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void keep_closing(EventLoop& loop, std::shared_ptr<BufferSender> sender) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  const BufferSender* key = sender.get();
  r.closing[&loop][key] = std::move(sender);
}

std::shared_ptr<BufferSender> release_closing(EventLoop& loop, const BufferSender* sender) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  const auto per_loop = r.closing.find(&loop);
  if (per_loop == r.closing.end()) return nullptr;
  const auto it = per_loop->second.find(sender);
  if (it == per_loop->second.end()) return nullptr;
  auto kept = std::move(it->second);
  per_loop->second.erase(it);
  if (per_loop->second.empty()) r.closing.erase(per_loop);
  return kept;
}

void finish_closing(EventLoop& loop) noexcept {
  std::vector<std::shared_ptr<BufferSender>> senders;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    const auto per_loop = r.closing.find(&loop);
    if (per_loop == r.closing.end()) return;
    for (auto& [key, sender] : per_loop->second) senders.push_back(std::move(sender));
    r.closing.erase(per_loop);
  }
  for (const auto& sender : senders) sender->end_close_at_stop();
  // The connections are destroyed here, with the back-ends still there.
}

}  // namespace netio::detail
