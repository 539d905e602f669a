// artcommon/leaf.h — leaves: an allocator block holding value, key length and key bytes.
// A leaf is written whole before it is published; afterwards only its value word changes
// (upsert/update: one 8-byte store, the commit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/artcommon/art_layout.h"
#include "wort/key.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::artcommon {

//! Block size a leaf for a key of `key_len` bytes needs.
inline std::size_t leaf_bytes(std::size_t key_len) noexcept { return sizeof(Leaf) + key_len; }

//! The key a leaf holds.
inline Key leaf_key(const Leaf* l) noexcept { return {l->key, l->key_len}; }

//! True if the leaf holds exactly `k`.
inline bool leaf_matches(const Leaf* l, Key k) noexcept {
  return l->key_len == k.size() && (k.empty() || std::memcmp(l->key, k.data(), k.size()) == 0);
}

//! Key byte i as an unsigned byte.
inline std::uint8_t key_byte(Key k, std::size_t i) noexcept {
  return static_cast<std::uint8_t>(k[i]);
}

//! Length of the common prefix of a and b, counting from `from` (both agree before it);
//! the shorter length if one is a prefix of the other.
std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept;

//! Allocates and writes a leaf, writes it back (no fence: the publishing store's fence
//! orders it). On out_of_space nothing is allocated.
Status make_leaf(Pool& pool, Key k, Value v, Ref* out) noexcept;


}  // namespace wort::artcommon
