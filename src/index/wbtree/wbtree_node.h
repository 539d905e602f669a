// index/wbtree/wbtree_node.h — one wB+Tree node: its sorted view (from the slot array, or
// by sorting the valid entries when the slot array is marked invalid), searches over it,
// and the bitmap+slot write protocol of an insert or remove inside the node.
#pragma once

#include <cstddef>
#include <cstdint>

#include "index/wbtree/wbtree_key.h"
#include "index/wbtree/wbtree_layout.h"

namespace wort::wbtree {

//! Entry positions of a node in ascending key order.
struct View {
  unsigned n = 0;
  std::uint8_t pos[kMaxCapacity];
};

//! How a node write ends: the operation's commit (pm::publish) or a step of a split, root
//! growth or recovery (fence + pm::store_persist: not a commit, the operation commits later).
enum class Finish { commit, structural };

//! The entry positions of `n` in key order. Uses the slot array when bit 63 of the bitmap
//! says it is valid; otherwise sorts the valid entries (a crash interrupted a node write).
View sorted_view(const std::byte* base, const Node* n) noexcept;

//! First view index whose key is >= p (n.n if none).
unsigned lower_bound(const std::byte* base, const Node* n, const View& v, const Probe& p) noexcept;

//! Inner nodes: the view index of the child whose subtree holds p: the last entry whose
//! key is <= p, or 0 (the first entry's key is a lower bound only).
unsigned route(const std::byte* base, const Node* n, const View& v, const Probe& p) noexcept;

//! Number of valid entries the bitmap shows.
inline unsigned count_of(const Node* n) noexcept {
  return static_cast<unsigned>(__builtin_popcountll(n->bitmap & ~kSlotsValid));
}

//! Writes a new node into fresh memory (not yet reachable): header, slot array and the
//! given entries in key order at positions 0..count-1, then flushes it (not fenced).
void init_node(Node* n, std::uint32_t level, std::uint32_t capacity, const Entry* sorted,
               unsigned count) noexcept;

//! Adds `e` to `n` (count < capacity) at view index `at` (its key order place), with the
//! protocol of the WORT paper's bitmap+slot wB+Tree: write the entry into a free position
//! and flush it; clear the slot-valid bit (flush, fence); rewrite the slot array (flush);
//! set the entry's bit and the slot-valid bit in one store — the commit, or a structural
//! store (`how`). Anything `e` names (a key block) must be flushed already.
void insert_entry(Node* n, const View& v, unsigned at, const Entry& e, Finish how) noexcept;

//! Replaces the entry at view index `at` by `e` (same key order place; count < capacity: the
//! new entry needs a free position) with the same protocol: write `e` into a free
//! position and flush it; clear the slot-valid bit (flush, fence); rewrite the slot array
//! with the new position at `at` (flush); one store sets `e`'s bit and clears the old
//! entry's (and sets the slot-valid bit). Used structurally (a split's step 0).
void replace_entry(Node* n, const View& v, unsigned at, const Entry& e, Finish how) noexcept;

//! Removes the entry at view index `at`: clear the slot-valid bit (flush, fence), rewrite
//! the slot array (flush), clear the entry's bit and set the slot-valid bit in one store.
void remove_entry(Node* n, const View& v, unsigned at, Finish how) noexcept;

//! Keeps only the entries at view indexes [0, keep): one store clears the others' bits and
//! the slot-valid bit (persisted), the slot array count shrinks (flushed), then the
//! slot-valid bit is set again (fence + persisted store). A split step, never a commit.
void truncate_entries(Node* n, const View& v, unsigned keep) noexcept;

}  // namespace wort::wbtree
