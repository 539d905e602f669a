// baseline/art/node16.h — up to 16 children, keys sorted, searched with one SSE2 compare.
//
//   header 24 | keys[16] | children[16] (Ref)               = 168 bytes
//
// Holds 4..16 children: grows from a full Node4 (at 5), shrinks back to a Node4 when a
// removal leaves 3, and is what a Node48 shrinks to at 12.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>

#include "baseline/art/arena.h"
#include "baseline/art/node.h"
#include "index/kit/match16.h"

namespace wort::art {

struct Node4;
struct Node48;

struct Node16 : Node {
  static constexpr std::size_t kCapacity = 16;
  static constexpr std::size_t kShrinkAt = 3;  //!< becomes a Node4 at this many children

  std::array<std::uint8_t, kCapacity> keys{};  //!< sorted branch bytes
  std::array<Ref, kCapacity> children{};

  Node16() noexcept : Node(NodeType::node16) {}
  //! A Node16 from `arena` with the contents of a full Node4.
  static Node16* grown_from(Arena& arena, const Node4& from);
  //! A Node16 from `arena` with the contents of a Node48 of at most 16 children.
  static Node16* shrunk_from(Arena& arena, const Node48& from);

  //! The child under `byte`, or nullptr (inline: lookups call it once per level).
  Ref* find(std::uint8_t byte) noexcept {
    const int i = index_of(byte);
    return i < 0 ? nullptr : &children[static_cast<std::size_t>(i)];
  }
  std::optional<Child> next(unsigned from) const noexcept;
  void add(std::uint8_t byte, Ref child) noexcept;
  void remove(std::uint8_t byte) noexcept;

  //! Empty if the type's own invariants hold, else what is wrong (verify()).
  std::string invariant_error() const;

 private:
  //! Index of `byte` among the keys, or -1: all 16 key bytes compared at once, slots
  //! past count masked off.
  int index_of(std::uint8_t byte) const noexcept {
    const std::uint32_t hits = kit::match16(keys.data(), byte) & ((1u << count) - 1u);
    return hits != 0 ? std::countr_zero(hits) : -1;
  }
};

static_assert(sizeof(Node16) == 168, "Node16 layout");

}  // namespace wort::art
