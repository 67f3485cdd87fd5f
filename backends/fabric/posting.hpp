// SPDX-License-Identifier: MIT
// What both fabric sockets do around posting operations and their completions, once:
//
// - check_post: a posting call's return code (fi_send, fi_senddata, fi_inject, fi_injectdata).
//   0 is posted. -FI_EAGAIN means the provider's queue is full: the driver drains again after
//   post_retry_delay, where the socket posts again (a completion usually frees room before;
//   the timer is the safety net), and the socket stops posting for now. Any other code fails
//   the connection: on_failure("<describe()>: <call> failed: <why>").
// - CanceledOperations: operations that come back FI_ECANCELED, which providers do when the
//   connection goes down. The reason (FI_SHUTDOWN, usually) follows on the event queue, so a
//   socket waits for it up to `grace` before it reports the loss itself.
#pragma once

#include "backends/fabric/fabric_errors.hpp"
#include "backends/fabric/progress_driver.hpp"

#include <rdma/fi_errno.h>

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace netio::fabric {

inline constexpr std::chrono::milliseconds post_retry_delay{1};

enum class PostOutcome { posted, queue_full, failed };

template <typename Describe, typename OnFailure>
PostOutcome check_post(ssize_t rc, ProgressDriver& driver, const char* call, Describe&& describe,
                       OnFailure&& on_failure) {
  if (rc == 0) return PostOutcome::posted;
  if (rc == -FI_EAGAIN) {
    driver.kick_after(post_retry_delay);
    return PostOutcome::queue_full;
  }
  on_failure(std::string(call_failed(describe(), call, static_cast<int>(rc)).what()));
  return PostOutcome::failed;
}

class CanceledOperations {
 public:
  static constexpr std::chrono::milliseconds grace{200};

  // An operation came back FI_ECANCELED: remembers when the first did, and drains again when
  // the grace is over.
  void note(ProgressDriver& driver) {
    if (!since_) since_ = std::chrono::steady_clock::now();
    driver.kick_after(grace);
  }
  // Operations were canceled `grace` ago and no reason came: the connection is lost.
  bool grace_over() const noexcept { return since_ && std::chrono::steady_clock::now() - *since_ >= grace; }

 private:
  std::optional<std::chrono::steady_clock::time_point> since_;
};

}  // namespace netio::fabric
