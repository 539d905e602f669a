// index/art/leaf.h — a leaf: one key's full bytes and its value.
//
// Leaves store the whole key (not just the suffix) so that a lookup can skip prefix bytes
// optimistically and confirm at the leaf, and so that the hybrid path compression can read
// a node's full prefix from any leaf below it (see prefix.h).
//
//   +---------+---------+---------+----------------------+
//   | value 8 | len 4   | pad 4   | key bytes (len)      |
//   +---------+---------+---------+----------------------+
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "wort/key.h"

namespace wort::art {

struct Leaf {
  Value value = 0;
  std::uint32_t key_len = 0;

  //! A new leaf holding a copy of `k` (throws std::bad_alloc like new).
  static Leaf* make(Key k, Value v);
  //! Frees a leaf made by make().
  static void destroy(Leaf* l) noexcept;

  //! The key bytes, which follow the header in the same allocation.
  Key key() const noexcept {
    return {reinterpret_cast<const std::byte*>(this + 1), key_len};
  }
  //! True if this leaf holds exactly `k`.
  bool matches(Key k) const noexcept { return compare_keys(key(), k) == 0; }
  //! DRAM bytes of this leaf (header + key).
  std::size_t bytes() const noexcept { return sizeof(Leaf) + key_len; }
};

//! Owns a leaf until it is linked into the tree (so a failed allocation later in the same
//! operation does not leak it).
struct LeafDeleter {
  void operator()(Leaf* l) const noexcept { Leaf::destroy(l); }
};
using LeafPtr = std::unique_ptr<Leaf, LeafDeleter>;

static_assert(sizeof(Leaf) == 16 && alignof(Leaf) == 8, "key bytes start at offset 16");

}  // namespace wort::art
