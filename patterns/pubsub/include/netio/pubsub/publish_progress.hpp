// SPDX-License-Identifier: MIT
/// @file
/// How far one message of PublishSocket::try_publish() got: the subscribers still to serve.
#pragma once

#include "netio/pubsub/subscription.hpp"

#include <memory>
#include <vector>

namespace netio::pubsub {

namespace detail {
struct PendingDelivery;
}

/// Holds the subscribers a message has not reached yet. Not thread-safe: one message, one
/// caller at a time. Keeps the pending subscribers' connections referenced (not open) until
/// reset() or destruction.
class PublishProgress {
 public:
  PublishProgress();
  ~PublishProgress();
  PublishProgress(PublishProgress&&) noexcept;
  PublishProgress& operator=(PublishProgress&&) noexcept;

  bool started() const noexcept { return started_; }
  /// True once every subscriber was served (or dropped, or left).
  bool complete() const noexcept;
  /// The subscribers the last attempt could not serve; a retry tries these only.
  std::vector<SubscriberInfo> skipped() const;
  std::size_t skipped_count() const noexcept;
  /// Forget the message: the next try_publish() starts a new one.
  void reset() noexcept;

 private:
  friend class PublishSocket;
  bool started_ = false;
  std::vector<detail::PendingDelivery> pending_;
};

}  // namespace netio::pubsub
