// roart/roart_leaf.h — leaves (value, key length, key bytes) and the 16-bit key fingerprint
// that leaf arrays filter by. A leaf is written whole before it is published; afterwards
// only its value word changes (upsert/update: one 8-byte commit store).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/roart/roart_layout.h"
#include "wort/key.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::roart {

inline std::size_t leaf_bytes(std::size_t key_len) noexcept { return sizeof(Leaf) + key_len; }
inline Key leaf_key(const Leaf* l) noexcept { return {l->key, l->key_len}; }
inline bool leaf_matches(const Leaf* l, Key k) noexcept {
  return l->key_len == k.size() && (k.empty() || std::memcmp(l->key, k.data(), k.size()) == 0);
}
inline std::uint8_t key_byte(Key k, std::size_t i) noexcept {
  return static_cast<std::uint8_t>(k[i]);
}

//! 16-bit fingerprint of a whole key (a multiplicative hash of its 8-byte words).
std::uint16_t fingerprint(Key k) noexcept;

//! Length of the common prefix of a and b from `from` (both agree before it); the shorter
//! length if one is a prefix of the other.
std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept;

//! Allocates, writes and writes back a leaf (no fence: the publishing commit fences).
Status make_leaf(Pool& pool, Key k, Value v, std::uint64_t* off) noexcept;

//! Upsert/update commit: the leaf's value word through kit::commit_value_nt (pm::commit_nt;
//! pm::publish_nt, a fence first, in a pool whose values name blocks).
void commit_value(const Pool& pool, Leaf* l, Value v) noexcept;

}  // namespace wort::roart
