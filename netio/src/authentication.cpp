// SPDX-License-Identifier: MIT
#include "authentication.hpp"

#include "netio/error.hpp"

#include <fmt/format.h>

#ifdef NETIO_WITH_SODIUM
#include <sodium.h>
#endif

#include <string_view>

namespace netio::detail {

namespace {

#ifndef NETIO_WITH_SODIUM
[[noreturn]] void unsupported(std::string_view who) {
  throw Error(Errc::backend_error,
              fmt::format("{}: a pre-shared key needs netio built with libsodium (NETIO_WITH_SODIUM), and this build "
                          "has none",
                          who));
}
#endif

#ifdef NETIO_WITH_SODIUM
void initialise() {
  static const int result = ::sodium_init();  // thread-safe, and once is enough
  if (result < 0) throw Error(Errc::backend_error, "libsodium failed to initialise (sodium_init)");
}
#endif

}  // namespace

void require_auth_support([[maybe_unused]] std::string_view who) {
#ifdef NETIO_WITH_SODIUM
  initialise();
#else
  unsupported(who);
#endif
}

AuthNonce random_nonce() {
#ifdef NETIO_WITH_SODIUM
  initialise();
  AuthNonce nonce;
  ::randombytes_buf(nonce.data(), nonce.size());
  return nonce;
#else
  unsupported("a challenge");
#endif
}

AuthProof auth_proof([[maybe_unused]] const PreSharedKey& key, [[maybe_unused]] AuthRole role,
                     [[maybe_unused]] const AuthNonce& sender_nonce, [[maybe_unused]] const AuthNonce& listener_nonce) {
#ifdef NETIO_WITH_SODIUM
  initialise();
  static_assert(auth_proof_size >= crypto_generichash_BYTES_MIN && auth_proof_size <= crypto_generichash_BYTES_MAX);
  static_assert(PreSharedKey::size >= crypto_generichash_KEYBYTES_MIN &&
                PreSharedKey::size <= crypto_generichash_KEYBYTES_MAX);
  const std::string_view label = role == AuthRole::listener ? "netio listener proof v1" : "netio sender proof v1";
  crypto_generichash_state state;
  ::crypto_generichash_init(&state, reinterpret_cast<const unsigned char*>(key.bytes().data()), key.bytes().size(),
                            auth_proof_size);
  ::crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(label.data()), label.size());
  ::crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(sender_nonce.data()), sender_nonce.size());
  ::crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(listener_nonce.data()),
                              listener_nonce.size());
  AuthProof proof;
  ::crypto_generichash_final(&state, reinterpret_cast<unsigned char*>(proof.data()), proof.size());
  ::sodium_memzero(&state, sizeof state);
  return proof;
#else
  unsupported("a proof");
#endif
}

bool auth_proof_matches(const PreSharedKey& key, AuthRole role, const AuthNonce& sender_nonce,
                        const AuthNonce& listener_nonce, std::span<const std::byte> proof) {
  if (proof.size() != auth_proof_size) return false;
  const AuthProof expected = auth_proof(key, role, sender_nonce, listener_nonce);
#ifdef NETIO_WITH_SODIUM
  static_assert(auth_proof_size == 16, "crypto_verify_16 compares 16 bytes");
  return ::crypto_verify_16(reinterpret_cast<const unsigned char*>(proof.data()),
                            reinterpret_cast<const unsigned char*>(expected.data())) == 0;
#else
  static_cast<void>(expected);  // not reached: auth_proof() threw
  return false;
#endif
}

}  // namespace netio::detail
