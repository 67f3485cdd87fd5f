// SPDX-License-Identifier: MIT
#include "backends/shm/sealed_file.hpp"

#include "netio/error.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>

namespace netio::shm {
namespace {

constexpr unsigned required_seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

posix::SocketFd create_sealed_file(const char* name, const char* what, std::size_t size) {
  posix::SocketFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) throw system_error(errno, fmt::format("memfd_create() for {} failed", what));
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    throw system_error(errno, fmt::format("sizing {} to {} bytes failed", what, size));
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, required_seals) != 0)
    throw system_error(errno, fmt::format("sealing {} failed", what));
  return fd;
}

std::size_t sealed_file_size(int fd, std::string& why) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (static_cast<unsigned>(seals) & required_seals) != required_seals) {
    why = "it is not sealed against resizing (not a memfd from netio)";
    return 0;
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    why = fmt::format("its size is unknown: {}", posix::errno_text(errno));
    return 0;
  }
  return static_cast<std::size_t>(status.st_size);
}

std::byte* map_shared(int fd, std::size_t size) noexcept {
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : static_cast<std::byte*>(base);
}

}  // namespace netio::shm
