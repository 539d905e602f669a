// baseline/art/node48.h — up to 48 children behind a 256-byte index.
//
//   header 24 | child_index[256] | children[48] (Ref)        = 664 bytes
//
// child_index[b] is 0 if byte b has no child, else 1 + the slot in `children` (slots are
// unordered; a removal leaves a hole that the next add reuses). Holds 13..48 children:
// grows from a full Node16 (at 17), becomes a Node16 when a removal leaves 12, and is what
// a Node256 shrinks to at 40.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "baseline/art/arena.h"
#include "baseline/art/node.h"

namespace wort::art {

struct Node16;
struct Node256;

struct Node48 : Node {
  static constexpr std::size_t kCapacity = 48;
  static constexpr std::size_t kShrinkAt = 12;  //!< becomes a Node16 at this many children
  static constexpr std::uint8_t kEmpty = 0;     //!< child_index value of an absent byte

  std::array<std::uint8_t, 256> child_index{};  //!< byte -> 1 + slot, or kEmpty
  std::array<Ref, kCapacity> children{};        //!< slots; empty Ref where unused

  Node48() noexcept : Node(NodeType::node48) {}
  //! A Node48 from `arena` with the contents of a full Node16.
  static Node48* grown_from(Arena& arena, const Node16& from);
  //! A Node48 from `arena` with the contents of a Node256 of at most 48 children.
  static Node48* shrunk_from(Arena& arena, const Node256& from);

  //! The child under `byte`, or nullptr (inline: lookups call it once per level).
  Ref* find(std::uint8_t byte) noexcept {
    const std::uint8_t slot = child_index[byte];
    return slot == kEmpty ? nullptr : &children[slot - 1u];
  }
  std::optional<Child> next(unsigned from) const noexcept;
  void add(std::uint8_t byte, Ref child) noexcept;
  void remove(std::uint8_t byte) noexcept;

  //! Empty if the type's own invariants hold, else what is wrong (verify()).
  std::string invariant_error() const;

 private:
  //! Index of an unused slot (precondition: count < kCapacity).
  std::size_t free_slot() const noexcept;
};

static_assert(sizeof(Node48) == 664, "Node48 layout");

}  // namespace wort::art
