// A received high-throughput message. Move-only. When the message lies within one page it
// is a view into that page and keeps the page alive (zero copy) until the Message is
// destroyed. A message that spanned pages is joined in the buffer of the page it started
// in when that buffer has room for the rest (a view again), else reassembled into memory
// of its own.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace netio {

class Message {
 public:
  Message() = default;
  Message(std::span<const std::byte> view, std::shared_ptr<const void> keep_alive)
      : view_(view), keep_alive_(std::move(keep_alive)) {}
  explicit Message(std::vector<std::byte> owned)
      : owned_(std::make_shared<std::vector<std::byte>>(std::move(owned))) {
    view_ = std::span<const std::byte>(owned_->data(), owned_->size());
  }

  std::span<const std::byte> bytes() const noexcept { return view_; }
  const std::byte* data() const noexcept { return view_.data(); }
  std::size_t size() const noexcept { return view_.size(); }
  // Releases the page (or memory) now instead of at destruction.
  void release() noexcept {
    view_ = {};
    keep_alive_.reset();
    owned_.reset();
  }

 private:
  std::span<const std::byte> view_;
  std::shared_ptr<const void> keep_alive_;
  std::shared_ptr<std::vector<std::byte>> owned_;
};

}  // namespace netio
