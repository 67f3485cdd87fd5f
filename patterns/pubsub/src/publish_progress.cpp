// SPDX-License-Identifier: MIT
#include "netio/pubsub/publish_progress.hpp"

#include "pending_delivery.hpp"

namespace netio::pubsub {

PublishProgress::PublishProgress() = default;
PublishProgress::~PublishProgress() = default;
PublishProgress::PublishProgress(PublishProgress&&) noexcept = default;
PublishProgress& PublishProgress::operator=(PublishProgress&&) noexcept = default;

bool PublishProgress::complete() const noexcept { return started_ && pending_.empty(); }
std::size_t PublishProgress::skipped_count() const noexcept { return pending_.size(); }

std::vector<SubscriberInfo> PublishProgress::skipped() const {
  std::vector<SubscriberInfo> infos;
  infos.reserve(pending_.size());
  for (const auto& p : pending_) infos.push_back(p.connection->subscriber());
  return infos;
}

void PublishProgress::reset() noexcept {
  started_ = false;
  pending_.clear();
}

}  // namespace netio::pubsub
