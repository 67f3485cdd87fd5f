// SPDX-License-Identifier: MIT
#include "backends/posix/fd_registration.hpp"

#include <sys/epoll.h>

namespace netio::posix {

void FdRegistration::add(int fd, std::uint32_t events, EventLoop::FdCallback callback) {
  fd_ = fd;
  events_ = events;
  callback_ = std::move(callback);
  loop_.add_fd(fd_, events_, callback_);
  registered_ = true;
}

void FdRegistration::set(std::uint32_t events) {
  if (!registered_) {
    events_ = events;
    loop_.add_fd(fd_, events_, callback_);
    registered_ = true;
    if (spin_events_ != 0) loop_.spin_fd(fd_, spin_events_);
    return;
  }
  if (events == events_) return;
  events_ = events;
  loop_.modify_fd(fd_, events_);
}

void FdRegistration::update(bool reading, bool writing) {
  if (fd_ < 0 || (!registered_ && !reading)) return;  // suspended until the reader may read
  set((reading ? std::uint32_t{EPOLLIN} : 0u) | (writing ? std::uint32_t{EPOLLOUT} : 0u));
}

void FdRegistration::spin(std::uint32_t events) {
  spin_events_ = events;
  if (registered_) loop_.spin_fd(fd_, spin_events_);
}

void FdRegistration::suspend() {
  if (!registered_) return;
  loop_.remove_fd(fd_);
  registered_ = false;
}

void FdRegistration::remove() noexcept {
  if (registered_) loop_.remove_fd(fd_);
  registered_ = false;
  fd_ = -1;
}

bool FdRegistration::wants_output() const noexcept { return registered_ && (events_ & EPOLLOUT) != 0; }

}  // namespace netio::posix
