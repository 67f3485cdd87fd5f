// SPDX-License-Identifier: MIT
/// @file
/// A received high-throughput message (or a reply). Move-only: a Message holds what it lies
/// in (a page, a receive credit) until it is destroyed or released, and a copy would hold it
/// twice as long without saying so. Moving leaves the source empty (size() 0, an empty
/// peer()). When the message lies within one page it is a view into that page and keeps the
/// page alive (zero copy) until the Message is destroyed. A message that spanned pages is joined in the buffer of the
/// page it started in when that buffer has room for the rest (a view again), else reassembled into memory of its own.
/// peer() says which connection it came from and answers its sender.
#pragma once

#include "netio/peer.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace netio {

namespace detail {
struct MessageAccess;  // the receive sockets' constructor (netio/src/message_access.hpp)
}

class Message {
 public:
  Message() = default;
  Message(std::span<const std::byte> view, std::shared_ptr<const void> keep_alive)
      : view_(view), keep_alive_(std::move(keep_alive)) {}
  explicit Message(std::vector<std::byte> owned) : owned_(std::make_shared<std::vector<std::byte>>(std::move(owned))) {
    view_ = std::span<const std::byte>(owned_->data(), owned_->size());
  }
  Message(std::vector<std::byte> owned, Peer peer) : Message(std::move(owned)) {
    owned_peer_ = std::make_shared<Peer>(std::move(peer));
    peer_ = owned_peer_.get();
  }

  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  Message(Message&& other) noexcept
      : view_(std::exchange(other.view_, {})),
        keep_alive_(std::move(other.keep_alive_)),
        owned_(std::move(other.owned_)),
        peer_(std::exchange(other.peer_, nullptr)),
        owned_peer_(std::move(other.owned_peer_)) {}
  Message& operator=(Message&& other) noexcept {
    if (this != &other) {
      view_ = std::exchange(other.view_, {});
      keep_alive_ = std::move(other.keep_alive_);
      owned_ = std::move(other.owned_);
      peer_ = std::exchange(other.peer_, nullptr);
      owned_peer_ = std::move(other.owned_peer_);
    }
    return *this;
  }
  ~Message() = default;

  /// The connection the message came from (an empty Peer for a message made by hand).
  Peer peer() const { return peer_ ? *peer_ : Peer(); }

  std::span<const std::byte> bytes() const noexcept { return view_; }
  const std::byte* data() const noexcept { return view_.data(); }
  std::size_t size() const noexcept { return view_.size(); }
  /// Releases the page (or memory) now instead of at destruction.
  void release() noexcept {
    view_ = {};
    keep_alive_.reset();
    owned_.reset();
    owned_peer_.reset();
    peer_ = nullptr;
  }

 private:
  friend struct detail::MessageAccess;
  /// As the view constructor, from `peer`: a raw pointer, kept valid by `keep_alive` (which
  /// holds a reference to the peer's state), so that a message costs no extra reference count.
  Message(std::span<const std::byte> view, std::shared_ptr<const void> keep_alive, const Peer* peer)
      : view_(view), keep_alive_(std::move(keep_alive)), peer_(peer) {}

  std::span<const std::byte> view_;
  std::shared_ptr<const void> keep_alive_;
  std::shared_ptr<std::vector<std::byte>> owned_;
  const Peer* peer_ = nullptr;
  std::shared_ptr<const Peer> owned_peer_;
};

}  // namespace netio
