// artcow/artcow_layout.h — ART+CoW's own node layouts (paper §3.6): ART's NODE4 and NODE16
// with sorted partial keys, never edited in place once published. A change copies the
// node, edits the copy, writes it back and swaps the parent's pointer (the commit).
// NODE48, NODE256 (edited in place, as in WOART/WORT), leaves and the node base are in
// art_engine/art_layout.h.
//
// NODE4 (64 bytes, one cache line):
//   +------------+-------+---------+-------+--------------------------+
//   | base (24)  | count | key[4]  | pad 3 | child[4] (8 bytes each)  |
//   +------------+-------+---------+-------+--------------------------+
// NODE16 (176 bytes):
//   +------------+-------+-------+------------------+----------------------+
//   | base (24)  | count | pad 7 | key[16] (sorted) | child[16] (parallel) |
//   +------------+-------+-------+------------------+----------------------+
// key[0..count) ascending, child[i] belongs to key[i].
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "index/art_engine/art_layout.h"

namespace wort::artcow {

using art_engine::NodeBase;
using art_engine::Ref;

struct Node4 {
  NodeBase base;
  std::uint8_t count;
  std::uint8_t key[4];
  std::uint8_t pad[3];
  Ref child[4];
};
static_assert(std::is_standard_layout_v<Node4>);
static_assert(offsetof(Node4, count) == 24 && offsetof(Node4, key) == 25);
static_assert(offsetof(Node4, child) == 32 && sizeof(Node4) == 64, "NODE4 is one cache line");

struct Node16 {
  NodeBase base;
  std::uint8_t count;
  std::uint8_t pad[7];
  std::uint8_t key[16];
  Ref child[16];
};
static_assert(std::is_standard_layout_v<Node16>);
static_assert(offsetof(Node16, count) == 24 && offsetof(Node16, key) == 32);
static_assert(offsetof(Node16, child) == 48 && sizeof(Node16) == 176);

}  // namespace wort::artcow
