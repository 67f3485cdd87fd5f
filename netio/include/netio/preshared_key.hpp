// SPDX-License-Identifier: MIT
/// @file
/// A pre-shared key for authenticating peers (AdmissionOptions::key on a receive socket,
/// the send options' `key` on a send socket). Both sides prove that they hold it with a
/// challenge-response in the handshake: each side sends a fresh random nonce, and each
/// answers with a keyed BLAKE2b MAC (libsodium's crypto_generichash) over both nonces, so
/// an answer recorded from one connection is worth nothing on another. The key itself never
/// travels.
///
/// Needs netio built with libsodium (NETIO_WITH_SODIUM); without it, a socket given a key
/// throws Errc::backend_error saying so (a key is never silently ignored).
///
/// Thread-safety: an immutable value; copies may be used from any thread. The bytes are
/// wiped when the last copy goes.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace netio {

class PreSharedKey {
 public:
  static constexpr std::size_t size = 32;
  using Bytes = std::array<std::byte, size>;

  /// A key file holds exactly 64 hexadecimal digits (32 bytes), surrounding white space
  /// allowed; make one with `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > FILE`
  /// and `chmod 600 FILE`. Throws netio::Error naming the file and what is wrong: missing,
  /// unreadable, readable by group or others, not 64 hexadecimal digits.
  static PreSharedKey from_file(const std::string& path);
  /// The same format from a string; `what` names its origin in errors.
  static PreSharedKey from_hex(std::string_view hex, std::string_view what = "the key");
  explicit PreSharedKey(const Bytes& bytes);

  const Bytes& bytes() const noexcept { return *bytes_; }
  /// Whether this build can authenticate with a key (libsodium).
  static bool supported() noexcept;

 private:
  std::shared_ptr<const Bytes> bytes_;
};

}  // namespace netio
