// HMAC-SHA256 and the other small cryptographic pieces the rendezvous needs (OpenSSL).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cohort::rendezvous {

inline constexpr size_t kMacSize = 32;
inline constexpr size_t kSecretSize = 32;

// Returns the 32-byte HMAC-SHA256 of `data` under `key`.
std::string hmac_sha256(std::string_view key, std::string_view data);
// Compares in time independent of where the inputs differ.
bool constant_time_equal(std::string_view a, std::string_view b);
// `n` bytes from the operating system's random source; throws if none is available.
std::string random_bytes(size_t n);

std::string to_hex(std::string_view bytes);
// Throws InvalidArgument on an odd length or a non-hex character.
std::string from_hex(std::string_view hex);

}  // namespace cohort::rendezvous
