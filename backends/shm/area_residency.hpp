// SPDX-License-Identifier: MIT
// The pages of a peer's send area a shm:// receiver keeps mapped in (issue 49). The
// receiver lends the area's bytes in place, and every page it reads is faulted into its
// mapping, where it would stay while the connection lives: a peer referencing the pages of
// a 1 GiB area one after another took the receiver's resident memory up by as much. So the
// area is tracked in blocks: a block lent is resident; once nothing lent lies in it, it
// waits, given back, and when more than `window` bytes are resident the blocks given back
// longest ago are released (MADV_DONTNEED: the mapping stays, this process's page table
// entries go; the pages are the sender's file's and read the same when faulted in again).
// A sender cycling through a pool smaller than the window (a netio sender's pool reuses its
// pages, last given back first) never has a page released.
//
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>

namespace netio::shm {

class AreaResidency {
 public:
  // The unit tracked and released (a multiple of the system's page).
  static constexpr std::size_t block_size = 64 * 1024;

  // `area`: the mapping of the peer's area (page-aligned); `window`: the bytes kept resident
  // at most besides what is lent.
  AreaResidency(std::span<std::byte> area, std::size_t window) noexcept : area_(area), window_(window) {}

  // `bytes` (inside the area) are lent now: resident until released after their return.
  // Releases the blocks given back longest ago while more than the window is resident.
  void lent(std::span<const std::byte> bytes);
  // `bytes`, lent before, are given back.
  void returned(std::span<const std::byte> bytes);

  // Bytes of the area resident now (whole blocks), at most the window plus what is lent.
  std::size_t resident() const noexcept { return blocks_.size() * block_size; }
  // Blocks released so far.
  std::uint64_t released() const noexcept { return released_; }

 private:
  struct Block {
    std::uint32_t lent = 0;
    std::list<std::uint64_t>::iterator idle_at{};  // in idle_ when lent == 0
  };
  // The blocks `bytes` lie in: [first, last].
  std::pair<std::uint64_t, std::uint64_t> blocks_of(std::span<const std::byte> bytes) const noexcept;
  void release_beyond_window();

  std::span<std::byte> area_;
  std::size_t window_;
  std::unordered_map<std::uint64_t, Block> blocks_;  // resident blocks, by index
  std::list<std::uint64_t> idle_;                    // given back, longest ago first
  std::uint64_t released_ = 0;
};

}  // namespace netio::shm
