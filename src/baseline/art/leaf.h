// baseline/art/leaf.h — a leaf: one key's full bytes and its value.
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
#include <cstring>
#include <memory>

#include "baseline/art/arena.h"
#include "wort/key.h"

namespace wort::art {

struct Leaf {
  Value value = 0;
  std::uint32_t key_len = 0;

  //! A new leaf from `arena` holding a copy of `k` (throws std::bad_alloc). Inline, with
  //! one 8-byte move for an 8-byte key (a memcpy call with a run-time length otherwise).
  static Leaf* make(Arena& arena, Key k, Value v) {
    if (k.size() > UINT32_MAX) [[unlikely]] too_long();
    void* mem = arena.allocate(sizeof(Leaf) + k.size());
    auto* l = new (mem) Leaf;
    l->value = v;
    l->key_len = static_cast<std::uint32_t>(k.size());
    std::byte* dst = static_cast<std::byte*>(mem) + sizeof(Leaf);
    if (k.size() == 8) {
      std::memcpy(dst, k.data(), 8);
    } else if (!k.empty()) {
      std::memcpy(dst, k.data(), k.size());
    }
    return l;
  }
  [[noreturn]] static void too_long();
  //! Gives a leaf made by make() back to its arena.
  static void destroy(Arena& arena, Leaf* l) noexcept;

  //! The key bytes, which follow the header in the same allocation.
  Key key() const noexcept {
    return {reinterpret_cast<const std::byte*>(this + 1), key_len};
  }
  //! True if this leaf holds exactly `k`: 8 bytes at a time, inline (no memcmp call; an
  //! 8-byte integer key is one compare).
  bool matches(Key k) const noexcept {
    if (k.size() != key_len) return false;
    const std::byte* a = reinterpret_cast<const std::byte*>(this + 1);
    const std::byte* b = k.data();
    std::size_t n = key_len;
    for (; n >= 8; n -= 8, a += 8, b += 8) {
      std::uint64_t x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (x != y) return false;
    }
    for (; n != 0; --n, ++a, ++b)
      if (*a != *b) return false;
    return true;
  }
  //! DRAM bytes of this leaf (header + key).
  std::size_t bytes() const noexcept { return sizeof(Leaf) + key_len; }
};

//! Owns a leaf until it is linked into the tree (so a failed allocation later in the same
//! operation does not leak it).
struct LeafDeleter {
  Arena* arena;
  void operator()(Leaf* l) const noexcept { Leaf::destroy(*arena, l); }
};
using LeafPtr = std::unique_ptr<Leaf, LeafDeleter>;

static_assert(sizeof(Leaf) == 16 && alignof(Leaf) == 8, "key bytes start at offset 16");

}  // namespace wort::art
