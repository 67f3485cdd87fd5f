// SPDX-License-Identifier: MIT
// The pre-shared-key challenge-response of the handshake (netio/socket_options.hpp).
//
//   sender   -> listener : hello with flag 1 and nonce Ns (16 random bytes)      (handshake.hpp)
//   listener -> sender   : accept data = nonce Nl (16 random bytes) | listener proof (16 bytes)
//   sender   -> listener : first buffer = "NTAU" | sender proof (16 bytes) | introduction
//
// A proof is BLAKE2b keyed with the key (crypto_generichash, 16-byte output) over a label
// naming the role ("netio listener proof v1" / "netio sender proof v1"), then Ns, then Nl.
// Each side checks the other's proof in constant time (crypto_verify_16). Both nonces are
// in both proofs, and each side picks its own nonce afresh: an answer recorded from one
// connection fails on any other, and the two roles' proofs cannot stand in for each other.
//
// Without libsodium every function throws Errc::backend_error (the caller never gets a key
// it cannot use that far: see require_support()).
#pragma once

#include "netio/socket_options.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace netio::detail {

constexpr std::size_t auth_nonce_size = 16;
constexpr std::size_t auth_proof_size = 16;
using AuthNonce = std::array<std::byte, auth_nonce_size>;
using AuthProof = std::array<std::byte, auth_proof_size>;

// The listener's accept data: its nonce, then its proof.
constexpr std::size_t auth_accept_size = auth_nonce_size + auth_proof_size;
// What the sender puts before its introduction.
constexpr std::uint32_t auth_block_magic = 0x5541544E;  // "NTAU" in little-endian byte order
constexpr std::size_t auth_block_size = 4 + auth_proof_size;

enum class AuthRole { listener, sender };

// Throws Errc::backend_error naming `who` when this build has no libsodium.
void require_auth_support(std::string_view who);
AuthNonce random_nonce();
AuthProof auth_proof(const PreSharedKey& key, AuthRole role, const AuthNonce& sender_nonce,
                     const AuthNonce& listener_nonce);
// Constant-time comparison of `proof` (any size: a wrong size is false) with the expected one.
bool auth_proof_matches(const PreSharedKey& key, AuthRole role, const AuthNonce& sender_nonce,
                        const AuthNonce& listener_nonce, std::span<const std::byte> proof);

}  // namespace netio::detail
