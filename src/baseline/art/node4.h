// baseline/art/node4.h — the smallest inner node: up to 4 children, keys sorted.
//
//   header 24 | keys[4] | pad 4 | children[4] (Ref)        = 64 bytes, one cache line
//
// A Node4 holds 1..4 children and, with the terminal leaf, at least two entries. It never
// shrinks: when remove leaves it one entry, the tree collapses it (art_tree.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "baseline/art/arena.h"
#include "baseline/art/node.h"

namespace wort::art {

struct Node16;

struct Node4 : Node {
  static constexpr std::size_t kCapacity = 4;

  std::array<std::uint8_t, kCapacity> keys{};  //!< sorted branch bytes
  std::array<Ref, kCapacity> children{};       //!< children[i] is under keys[i]

  Node4() noexcept : Node(NodeType::node4) {}
  //! A Node4 from `arena` with the contents of a Node16 of at most 4 children.
  static Node4* shrunk_from(Arena& arena, const Node16& from);

  //! The child under `byte`, or nullptr (inline: lookups call it once per level).
  Ref* find(std::uint8_t byte) noexcept {
    for (std::size_t i = 0; i < count; ++i)
      if (keys[i] == byte) return &children[i];
    return nullptr;
  }
  std::optional<Child> next(unsigned from) const noexcept;
  void add(std::uint8_t byte, Ref child) noexcept;
  void remove(std::uint8_t byte) noexcept;

  //! Empty if the type's own invariants hold, else what is wrong (verify()).
  std::string invariant_error() const;
};

static_assert(sizeof(Node4) == 64, "Node4 fills one cache line");

}  // namespace wort::art
