// SPDX-License-Identifier: MIT
#include "backends/shm/segment.hpp"

#include "backends/shm/ring.hpp"
#include "backends/shm/sealed_file.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace netio::shm {
namespace {

std::size_t round_up(std::size_t value, std::size_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

std::size_t ring_capacity(std::size_t max_entry, std::size_t count, std::size_t limit) {
  const std::size_t entry = entry_size(max_entry);
  const std::size_t most = std::max(limit, 2 * entry);
  const std::size_t wanted = count >= most / entry ? most : entry * std::max<std::size_t>(count, 2);
  return round_up(wanted, page_size);
}

std::shared_ptr<Segment> Segment::create(std::size_t data_capacity, std::size_t reply_capacity) {
  const std::size_t size = data_offset + data_capacity + reply_capacity;
  posix::SocketFd fd = create_sealed_file("netio-shm", "a shared segment", size);
  std::byte* base = map_shared(fd.get(), size);
  if (base == nullptr) throw system_error(errno, fmt::format("mapping a {}-byte shared segment failed", size));
  auto* header = reinterpret_cast<SegmentHeader*>(base);
  *header = SegmentHeader{segment_magic, segment_version, data_capacity, reply_capacity};
  new (base + data_control_offset) RingControl{};
  new (base + reply_control_offset) RingControl{};
  return std::shared_ptr<Segment>(new Segment(std::move(fd), base, size, data_capacity, reply_capacity));
}

std::shared_ptr<Segment> Segment::attach(posix::SocketFd fd, std::size_t max_data_capacity,
                                         std::size_t max_reply_capacity, std::string& why) {
  std::string unsealed;
  const std::size_t size = sealed_file_size(fd.get(), unsealed);
  if (!unsealed.empty()) {
    why = "the segment: " + unsealed;
    return nullptr;
  }
  if (size < data_offset) {
    why = "the segment is smaller than its header";
    return nullptr;
  }
  std::byte* base = map_shared(fd.get(), size);
  if (base == nullptr) {
    why = fmt::format("mapping the {}-byte segment failed: {}", size, posix::errno_text(errno));
    return nullptr;
  }
  SegmentHeader header{};
  std::memcpy(&header, base, sizeof header);  // read once: the peer may change it later
  const bool fits = header.magic == segment_magic && header.version == segment_version &&
                    header.data_capacity % 64 == 0 && header.reply_capacity % 64 == 0 &&
                    header.data_capacity <= max_data_capacity && header.reply_capacity <= max_reply_capacity &&
                    header.data_capacity > 0 && data_offset + header.data_capacity + header.reply_capacity == size;
  if (!fits) {
    ::munmap(base, size);
    why = fmt::format("its header does not describe a netio segment of {} bytes with rings of at most {} and {} bytes",
                      size, max_data_capacity, max_reply_capacity);
    return nullptr;
  }
  return std::shared_ptr<Segment>(new Segment(std::move(fd), base, size, static_cast<std::size_t>(header.data_capacity),
                                              static_cast<std::size_t>(header.reply_capacity)));
}

Segment::~Segment() { ::munmap(base_, size_); }

}  // namespace netio::shm
