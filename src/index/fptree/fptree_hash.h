// index/fptree/fptree_hash.h — the one-byte fingerprint of a key (paper §4.2).
//
// The paper assumes a hash with uniformly distributed bytes. This one mixes the key 8 bytes
// at a time (and its length, so keys that differ only in trailing zeros or length differ)
// and keeps the top byte. HashKind::constant maps every key to one byte: a tree created
// with it has a fingerprint collision on every slot, which the tests use to show that the
// full key comparison, not the fingerprint, decides.
#pragma once

#include <cstdint>
#include <cstring>

#include "index/fptree/fptree_layout.h"
#include "wort/key.h"

namespace wort::fptree_index {

inline std::uint64_t mix64(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

//! Fingerprint byte of `k` under `kind`.
inline std::uint8_t fingerprint(Key k, HashKind kind) noexcept {
  if (kind == HashKind::constant) return 0x5a;
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ k.size();
  std::size_t i = 0;
  for (; i + 8 <= k.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, k.data() + i, 8);
    h = mix64(h ^ w);
  }
  if (i < k.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, k.data() + i, k.size() - i);
    h = mix64(h ^ w ^ 0x100);
  }
  if (k.size() == 0) h = mix64(h);
  return static_cast<std::uint8_t>(h >> 56);
}

}  // namespace wort::fptree_index
