// wort/key.h — keys and values as every index sees them.
//
// A key is an arbitrary byte string (embedded zeros allowed, one key may be a prefix of
// another). Unsigned 64-bit integer keys are their 8-byte big-endian encoding, so byte
// order equals numeric order. A value is 8 bytes: a number or a pool offset, as in every
// paper we implement.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace wort {

using Key = std::span<const std::byte>;  //!< borrowed key bytes
using Value = std::uint64_t;             //!< 8-byte value or offset

//! Longest key the indexes must accept (they may accept more).
inline constexpr std::size_t kMaxKeyLength = 4096;

//! 8-byte big-endian encoding of an integer key.
inline std::array<std::byte, 8> u64_key(std::uint64_t k) noexcept {
  std::array<std::byte, 8> out;
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::byte>(k & 0xff);
    k >>= 8;
  }
  return out;
}

//! Inverse of u64_key (for a key of exactly 8 bytes; a shorter one reads as its bytes,
//! most significant first, in the low bytes of the result).
inline std::uint64_t key_u64(Key k) noexcept {
  std::uint64_t v = 0;
  if (k.size() == 8) {  // one load and a byte swap
    std::memcpy(&v, k.data(), 8);
    return __builtin_bswap64(v);
  }
  for (std::byte b : k) v = (v << 8) | static_cast<std::uint8_t>(b);
  return v;
}

//! View a string's bytes as a key (no copy).
inline Key as_key(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

//! View a key as a string_view (no copy).
inline std::string_view as_string(Key k) noexcept {
  return {reinterpret_cast<const char*>(k.data()), k.size()};
}

//! Lexicographic byte comparison (<0, 0, >0); a proper prefix sorts first.
inline int compare_keys(Key a, Key b) noexcept {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  if (n != 0) {
    if (int c = std::memcmp(a.data(), b.data(), n); c != 0) return c;
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

}  // namespace wort
