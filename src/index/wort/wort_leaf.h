// index/wort/wort_leaf.h — WORT leaves: one key and its value, written once before they are
// published; afterwards only the value word changes (the upsert commit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "index/wort/wort_layout.h"
#include "pm/persist.h"
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

//! Allocates a leaf for (k, v) and writes it with fresh mark `mark` (fresh_mark; pm::copy;
//! not flushed). Returns its child word (offset | kLeafTag). out_of_space leaves the pool
//! unchanged.
Status make_leaf(Pool& pool, Key k, Value v, std::uint32_t mark, std::uint64_t* word) noexcept;

//! Writes back a freshly written leaf (no fence).
void flush_leaf(const LeafHeader* l) noexcept;

//! key_len | fresh << 32, read as one word with one relaxed load (the mark is cleared under
//! readers): equal to a key's length exactly when the leaf's key has that length and the
//! leaf is not fresh.
inline std::uint64_t len_and_mark(const LeafHeader* l) noexcept {
  using Word [[gnu::may_alias]] = std::uint64_t;
  return __atomic_load_n(reinterpret_cast<const Word*>(&l->key_len), __ATOMIC_RELAXED);
}

//! The leaf's fresh mark (LeafHeader::fresh), one relaxed load: 0, this session's
//! fresh_mark (its publishing commit may not be durable yet), or an earlier session's.
inline std::uint32_t mark_of(const LeafHeader* l) noexcept {
  return __atomic_load_n(&l->fresh, __ATOMIC_RELAXED);
}

//! Clears the fresh mark once the publishing commit is durable: a volatile store, never
//! written back (a mark that survives a restart is harmless, wort_layout.h).
inline void clear_fresh(LeafHeader* l) noexcept {
  pm::store_volatile(&l->fresh, std::uint32_t{0});
}

}  // namespace wort::wort_index
