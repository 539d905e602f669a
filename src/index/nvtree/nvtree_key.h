// index/nvtree/nvtree_key.h — the key form of a leaf entry (prefix + meta, the wbtree form
// with a delete flag; see nvtree_layout.h): encode, compare, read back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "index/nvtree/nvtree_layout.h"
#include "wort/key.h"

namespace wort::nvtree {

//! First <= 8 bytes of `k`, big-endian, zero padded: u64 order == byte order of the prefix.
inline std::uint64_t key_prefix(Key k) noexcept {
  std::uint64_t p = 0;
  const std::size_t n = k.size() < 8 ? k.size() : 8;
  for (std::size_t i = 0; i < 8; ++i)
    p = (p << 8) | (i < n ? static_cast<std::uint8_t>(k[i]) : 0u);
  return p;
}

struct Probe {
  Key key;
  std::uint64_t prefix;
  explicit Probe(Key k) noexcept : key(k), prefix(key_prefix(k)) {}
};

inline std::uint64_t key_meta(const Entry& e) noexcept { return e.meta & ~kDeleteFlag; }
inline bool is_delete(const Entry& e) noexcept { return (e.meta & kDeleteFlag) != 0; }

//! Bytes of an entry's key; inline keys are rebuilt into `buf`.
inline Key entry_key(const std::byte* base, const Entry& e, std::array<std::byte, 8>& buf) noexcept {
  const std::uint64_t m = key_meta(e);
  if (m <= kMaxInline) {
    for (unsigned i = 0; i < 8; ++i) buf[i] = static_cast<std::byte>(e.prefix >> (56 - 8 * i));
    return {buf.data(), static_cast<std::size_t>(m)};
  }
  const auto* kb = reinterpret_cast<const KeyBlock*>(base + m);
  return {reinterpret_cast<const std::byte*>(kb + 1), static_cast<std::size_t>(kb->len)};
}

//! <0, 0, >0 as the entry's key sorts before, equal to, after the probe.
inline int compare(const std::byte* base, const Entry& e, const Probe& p) noexcept {
  if (e.prefix != p.prefix) return e.prefix < p.prefix ? -1 : 1;
  const std::uint64_t m = key_meta(e);
  if (m <= kMaxInline && p.key.size() <= kMaxInline)
    return m < p.key.size() ? -1 : (m > p.key.size() ? 1 : 0);
  std::array<std::byte, 8> buf;
  return compare_keys(entry_key(base, e, buf), p.key);
}

inline int compare(const std::byte* base, const Entry& a, const Entry& b) noexcept {
  std::array<std::byte, 8> buf;
  return -compare(base, b, Probe(entry_key(base, a, buf)));
}

}  // namespace wort::nvtree
