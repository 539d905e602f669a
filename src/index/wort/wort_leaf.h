// index/wort/wort_leaf.h — WORT leaves: one key and its value, written once before they are
// published; afterwards only the value word changes (the upsert commit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "index/wort/wort_layout.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::wort_index {

//! Key bytes of a leaf.
inline Key leaf_key(const LeafHeader* l) noexcept {
  return {reinterpret_cast<const std::byte*>(l + 1), l->key_len};
}

//! Bytes a leaf for a key of `key_len` bytes occupies.
inline std::size_t leaf_bytes(std::size_t key_len) noexcept {
  return sizeof(LeafHeader) + key_len;
}

//! Allocates a leaf for (k, v) and writes it (pm::copy; not flushed). Returns its child
//! word (offset | kLeafTag). out_of_space leaves the pool unchanged.
Status make_leaf(Pool& pool, Key k, Value v, std::uint64_t* word) noexcept;

//! Writes back a freshly written leaf (no fence).
void flush_leaf(const LeafHeader* l) noexcept;

}  // namespace wort::wort_index
