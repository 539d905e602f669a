// index/nvtree/nvtree_leaf.h — one NV-Tree leaf: the backward search (newest entry of a key
// wins), the replay that yields its live entries in key order, a fresh leaf, and the append
// that commits by its count store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/nvtree/nvtree_key.h"
#include "index/nvtree/nvtree_layout.h"

namespace wort::nvtree {

//! Index of the newest entry of the probe's key in [0, count), or -1.
int find_latest(const std::byte* base, const Leaf* l, const Probe& p) noexcept;

//! The leaf's live entries (newest of each key, if an insert), in ascending key order.
void live_sorted(const std::byte* base, const Leaf* l, std::vector<Entry>& out);

//! Writes a new leaf into fresh memory: header, `n` entries, `next`; flushes it (unfenced).
void init_leaf(Leaf* l, std::uint32_t capacity, std::uint64_t next, const Entry* e,
               std::size_t n) noexcept;

//! Appends `n` (1 or 2) entries at positions count.. (count + n <= capacity), flushes them,
//! then commits with the count store (pm::publish: the entries' write-back is fenced first).
//! Two flushes per insert, as the NV-Tree paper counts: the entries, then the count.
void append_and_commit(Leaf* l, const Entry* e, std::size_t n) noexcept;

}  // namespace wort::nvtree
