// art_engine/leaf.h — leaves: an allocator block holding value, key length, fresh mark and
// key bytes. A leaf is written whole before it is published; afterwards only its value word
// changes (upsert/update: one 8-byte store, the commit) and its fresh mark is cleared (a
// volatile store: README "No dirty reads").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/art_engine/art_layout.h"
#include "pm/persist.h"
#include "wort/key.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::art_engine {

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

//! Leaf::fresh of a leaf published in pool generation `gen` whose publishing commit may not
//! be durable yet: the generation's low 32 bits, never 0. The generation is bumped and
//! persisted by every open (Pool::generation), so a mark a crash or a clean exit left in PM
//! names an earlier session: its leaf is reachable, so its commit was durable.
inline constexpr std::uint32_t fresh_mark(std::uint64_t gen) noexcept {
  return static_cast<std::uint32_t>(gen) != 0 ? static_cast<std::uint32_t>(gen) : 1u << 31;
}

//! The leaf's fresh mark, one relaxed load: 0, this session's fresh_mark (its publishing
//! commit may not be durable yet), or an earlier session's (durable).
inline std::uint32_t mark_of(const Leaf* l) noexcept {
  return __atomic_load_n(&l->fresh, __ATOMIC_RELAXED);
}

//! Clears the fresh mark once the publishing commit is durable: a volatile store, never
//! written back (a mark that survives a restart names an older generation: harmless).
inline void clear_fresh(const Leaf* l) noexcept {
  pm::store_volatile(&const_cast<Leaf*>(l)->fresh, std::uint32_t{0});
}

//! True if the leaf's key_len and fresh mark, one 8-byte word, equal `len` (and 0): its key
//! has that length and it is not fresh. One compare with the word in memory (the compare of
//! key_len a lookup makes anyway, made 8 bytes wide: cmpq instead of cmpl).
[[gnu::always_inline]] inline bool len_is_not_fresh(const Leaf* l, std::uint64_t len) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  bool ne;
  using Word [[gnu::may_alias]] = std::uint64_t;
  asm("cmpq %2, %1"
      : "=@ccne"(ne)
      : "m"(*reinterpret_cast<const Word*>(&l->key_len)), "er"(len));
  return !ne;
#else
  // (the mark is cleared under readers: the word is read atomically)
  return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(&l->key_len),
                         __ATOMIC_RELAXED) == len;
#endif
}

//! Allocates and writes a leaf with fresh mark `mark` (fresh_mark(gen): an insert's new
//! leaf), writes it back (no fence: the publishing store's fence orders it). On
//! out_of_space nothing is allocated.
Status make_leaf(Pool& pool, Key k, Value v, std::uint32_t mark, Ref* out) noexcept;


}  // namespace wort::art_engine
