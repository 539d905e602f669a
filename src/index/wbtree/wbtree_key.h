// index/wbtree/wbtree_key.h — the key form of an entry (prefix + meta, see wbtree_layout.h):
// encoding a Key, comparing an entry with a Key, and reading an entry's key back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/wbtree/wbtree_layout.h"
#include "wort/key.h"

namespace wort::wbtree {

//! First <= 8 bytes of `k`, big-endian, zero padded: u64 order == byte order of the prefix.
inline std::uint64_t key_prefix(Key k) noexcept {
  std::uint64_t p = 0;
  const std::size_t n = k.size() < 8 ? k.size() : 8;
  for (std::size_t i = 0; i < 8; ++i)
    p = (p << 8) | (i < n ? static_cast<std::uint8_t>(k[i]) : 0u);
  return p;
}

//! A key being searched for, with its prefix computed once.
struct Probe {
  Key key;
  std::uint64_t prefix;
  explicit Probe(Key k) noexcept : key(k), prefix(key_prefix(k)) {}
};

//! Bytes of an entry's key: inline ones are rebuilt into `buf`.
inline Key entry_key(const std::byte* base, const Entry& e, std::array<std::byte, 8>& buf) noexcept {
  if (e.meta <= kMaxInline) {
    for (unsigned i = 0; i < 8; ++i) buf[i] = static_cast<std::byte>(e.prefix >> (56 - 8 * i));
    return {buf.data(), static_cast<std::size_t>(e.meta)};
  }
  const auto* kb = reinterpret_cast<const KeyBlock*>(base + e.meta);
  return {reinterpret_cast<const std::byte*>(kb + 1), static_cast<std::size_t>(kb->len)};
}

//! <0, 0, >0 as the entry's key sorts before, equal to, after the probe.
inline int compare(const std::byte* base, const Entry& e, const Probe& p) noexcept {
  if (e.prefix != p.prefix) return e.prefix < p.prefix ? -1 : 1;
  if (e.meta <= kMaxInline && p.key.size() <= kMaxInline)
    return e.meta < p.key.size() ? -1 : (e.meta > p.key.size() ? 1 : 0);
  std::array<std::byte, 8> buf;
  return compare_keys(entry_key(base, e, buf), p.key);
}

//! <0, 0, >0 comparing two entries' keys.
inline int compare(const std::byte* base, const Entry& a, const Entry& b) noexcept {
  std::array<std::byte, 8> buf;
  return -compare(base, b, Probe(entry_key(base, a, buf)));
}

}  // namespace wort::wbtree
