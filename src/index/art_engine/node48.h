// art_engine/node48.h — NODE48, shared by WOART and ART+CoW (paper §3.5: ART's NODE48 with
// the free pointer slot found through the child-index array, pointer first, index last).
#pragma once

#include <cstdint>
#include <string>

#include "index/art_engine/art_layout.h"
#include "index/art_engine/entries.h"

namespace wort::art_engine {

struct Node48Ops {
  static constexpr NodeType kType = NodeType::node48;
  static constexpr std::size_t kBytes = sizeof(Node48);
  static constexpr unsigned kCapacity = 48;
  static constexpr bool kInPlace = true;  //!< add/remove edit the node and commit in place
  static constexpr const char* kName = "node48";
  static constexpr bool kReusesSlots = true;  //!< see NodeOps::kReusesSlots (node_ops.h)

  //! Child for key byte b, or 0; a leaf only once its index byte is re-read unchanged.
  static Ref find(const NodeBase* n, std::uint8_t b) noexcept;
  //! Address of the pointer word for b (to swap a child), or nullptr.
  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept;
  //! Number of children.
  static unsigned count(const NodeBase* n) noexcept;
  //! Children with byte >= from, ascending; false if fn stopped.
  static bool for_each_from(const NodeBase* n, unsigned from, ChildFn fn);
  //! Some child and its key byte (the lowest byte with an index; kNull if none), for a
  //! witness walk: the index read eight bytes a load.
  static Ref any_child(const NodeBase* n, std::uint8_t* b) noexcept;
  //! Builds a fresh node from entries (n <= 48); written back, not fenced.
  static void build(NodeBase* dst, const NodeHeader& hdr, Ref eok, const Entries& e) noexcept;
  //! Adds b -> r in place: pointer into a slot no index byte names, fence, index byte (the
  //! commit, cached: publish_field_cached), persist. Precondition: r's target is written
  //! back. False if full.
  static bool add(NodeBase* n, std::uint8_t b, Ref r) noexcept;
  //! The index byte of b (add's commit word).
  static const void* add_word(const NodeBase* n, std::uint8_t b) noexcept;
  //! Removes b: clears its index byte (the commit) and persists it.
  static void remove(NodeBase* n, std::uint8_t b) noexcept;
  //! Internal consistency (index bytes in range, no slot named twice, no null child).
  static bool check(const NodeBase* n, std::string* why);
};

}  // namespace wort::art_engine
