// baseline/art/node256.h — one child slot per byte value.
//
//   header 24 | children[256] (Ref)                           = 2072 bytes
//
// Holds 41..256 children: grows from a full Node48 (at 49) and becomes a Node48 when a
// removal leaves 40 (hysteresis, so that one key going in and out at the boundary does
// not copy the node every time).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "baseline/art/arena.h"
#include "baseline/art/node.h"

namespace wort::art {

struct Node48;

struct Node256 : Node {
  static constexpr std::size_t kShrinkAt = 40;  //!< becomes a Node48 at this many children

  std::array<Ref, 256> children{};  //!< children[b] is the child under byte b, or empty

  Node256() noexcept : Node(NodeType::node256) {}
  //! A Node256 from `arena` with the contents of a full Node48.
  static Node256* grown_from(Arena& arena, const Node48& from);

  //! The child under `byte`, or nullptr (inline: lookups call it once per level).
  Ref* find(std::uint8_t byte) noexcept {
    return children[byte].empty() ? nullptr : &children[byte];
  }
  std::optional<Child> next(unsigned from) const noexcept;
  void add(std::uint8_t byte, Ref child) noexcept;
  void remove(std::uint8_t byte) noexcept;

  //! Empty if the type's own invariants hold, else what is wrong (verify()).
  std::string invariant_error() const;
};

static_assert(sizeof(Node256) == 2072, "Node256 layout");

}  // namespace wort::art
