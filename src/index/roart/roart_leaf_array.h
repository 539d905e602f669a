// roart/roart_leaf_array.h — leaf arrays (leaf compaction, §3.2): up to 64 leaves of one
// subtree in 8-byte slots {fingerprint 16 | leaf offset 48}, unsorted; a volatile bitmap of
// used slots rebuilt from the slots when the array's generation is stale.
#pragma once

#include <cstdint>

#include "index/roart/roart_layout.h"
#include "index/roart/roart_node.h"

namespace wort::roart {

//! One leaf of an array being built: fingerprint and leaf offset.
struct ArrayItem {
  std::uint16_t fp;
  std::uint64_t leaf;
};

//! Writes a fresh array holding `items` (at most 64) into `dst` and writes it back.
void build_array(LeafArray* dst, const ArrayItem* items, unsigned n, std::uint64_t gen) noexcept;
//! Recomputes the bitmap from the slots and stamps `gen` (volatile stores).
void rebuild_array_meta(LeafArray* a, std::uint64_t gen) noexcept;
//! Used slots counted from the persistent slots (recovery, verify).
unsigned count_slots(const LeafArray* a) noexcept;
//! Puts a leaf into a free slot: commit pm::publish(slot) (the fence orders the new leaf).
//! Returns false if the array is full. Needs current metadata.
bool add_to_array(LeafArray* a, std::uint16_t fp, std::uint64_t leaf, NodeFlags f) noexcept;
//! Clears slot i: commit pm::commit(slot, 0), then the bitmap.
void remove_from_array(LeafArray* a, unsigned i, NodeFlags f) noexcept;

}  // namespace wort::roart
