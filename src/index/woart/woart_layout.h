// woart/woart_layout.h — WOART's own node layouts (paper §3.5, Figure 5). NODE48, NODE256,
// leaves and the common node base are in art_engine/art_layout.h.
//
// NODE4 (64 bytes, one cache line):
//   +------------+-----------------------------------+----------------------------+
//   | base (24)  | slot word: key[4] | idx[4]         | child[4] (8 bytes each)    |
//   +------------+-----------------------------------+----------------------------+
//   idx[i] = 0: entry i empty, else child[idx[i]-1]. Valid entries are packed at the front
//   of the slot word and sorted by key, so the word alone defines the node's contents.
//   Add: child pointer into an unnamed slot, persist; then the slot word (the commit).
//   Remove: the slot word without the entry (the commit).
//
// NODE16 (176 bytes):
//   +------------+-------------+--------------------+-----------------------------+
//   | base (24)  | bitmap 2|pad| key[16] (unsorted) | child[16] (parallel to key) |
//   +------------+-------------+--------------------+-----------------------------+
//   bit i set: key[i]/child[i] valid. Add: key and child into a clear position, persist;
//   then the bitmap with the bit set (the commit). Remove: the bitmap with it clear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "index/art_engine/art_layout.h"

namespace wort::woart {

using art_engine::NodeBase;
using art_engine::Ref;

//! The 8-byte commit word of NODE4.
struct alignas(8) SlotWord {
  std::uint8_t key[4];  //!< partial keys, valid ones first, ascending
  std::uint8_t idx[4];  //!< 0 = empty, else child index + 1
};
static_assert(sizeof(SlotWord) == 8 && std::is_trivially_copyable_v<SlotWord>);

struct Node4 {
  NodeBase base;
  SlotWord slots;
  Ref child[4];
};
static_assert(std::is_standard_layout_v<Node4>);
static_assert(offsetof(Node4, slots) == 24 && offsetof(Node4, child) == 32);
static_assert(sizeof(Node4) == 64, "NODE4 fits in one cache line");

struct Node16 {
  NodeBase base;
  std::uint16_t bitmap;  //!< the commit word
  std::uint8_t pad[6];
  std::uint8_t key[16];
  Ref child[16];
};
static_assert(std::is_standard_layout_v<Node16>);
static_assert(offsetof(Node16, bitmap) == 24 && offsetof(Node16, key) == 32);
static_assert(offsetof(Node16, child) == 48 && sizeof(Node16) == 176);

}  // namespace wort::woart
