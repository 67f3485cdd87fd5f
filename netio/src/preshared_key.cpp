// SPDX-License-Identifier: MIT
#include "netio/socket_options.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#ifdef NETIO_WITH_SODIUM
#include <sodium.h>
#endif

namespace netio {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Key material left in memory outlives its use: wipe it in a way the compiler keeps.
void wipe_memory(void* data, std::size_t size) noexcept {
#ifdef NETIO_WITH_SODIUM
  sodium_memzero(data, size);
#else
  volatile unsigned char* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) p[i] = 0;
#endif
}

void wipe(PreSharedKey::Bytes* bytes) noexcept {
  wipe_memory(bytes->data(), bytes->size());
  delete bytes;
}

}  // namespace

PreSharedKey::PreSharedKey(const Bytes& bytes) : bytes_(new Bytes(bytes), wipe) {}

bool PreSharedKey::supported() noexcept {
#ifdef NETIO_WITH_SODIUM
  return true;
#else
  return false;
#endif
}

PreSharedKey PreSharedKey::from_hex(std::string_view hex, std::string_view what) {
  while (!hex.empty() && std::isspace(static_cast<unsigned char>(hex.front()))) hex.remove_prefix(1);
  while (!hex.empty() && std::isspace(static_cast<unsigned char>(hex.back()))) hex.remove_suffix(1);
  if (hex.size() != 2 * size) {
    throw Error(Errc::invalid_option,
                fmt::format("{}: a key is {} hexadecimal digits ({} bytes), this one has {} characters", what, 2 * size,
                            size, hex.size()));
  }
  Bytes bytes{};
  for (std::size_t i = 0; i < size; ++i) {
    const int high = hex_value(hex[2 * i]);
    const int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) {
      throw Error(Errc::invalid_option,
                  fmt::format("{}: character {} is not a hexadecimal digit", what, high < 0 ? 2 * i + 1 : 2 * i + 2));
    }
    bytes[i] = static_cast<std::byte>(high * 16 + low);
  }
  PreSharedKey key(bytes);
  wipe_memory(bytes.data(), bytes.size());
  return key;
}

PreSharedKey PreSharedKey::from_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    throw Error(Errc::invalid_option, fmt::format("key file {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(status.st_mode)) throw Error(Errc::invalid_option, fmt::format("key file {}: not a regular file", path));
  if ((status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw Error(Errc::invalid_option,
                fmt::format("key file {}: readable or writable by group or others (mode {:o}); chmod 600 it", path,
                            status.st_mode & 0777));
  }
  std::ifstream in(path);
  if (!in) throw Error(Errc::invalid_option, fmt::format("key file {}: cannot be read", path));
  std::string text(static_cast<std::size_t>(4 * size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (!in.eof()) throw Error(Errc::invalid_option, fmt::format("key file {}: too long for a key", path));
  auto key = from_hex(text, fmt::format("key file {}", path));
  wipe_memory(text.data(), text.size());
  return key;
}

}  // namespace netio
