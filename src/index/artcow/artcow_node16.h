// artcow/artcow_node16.h — ART+CoW NODE16: ART's sorted layout, copied on every change
// (kInPlace = false: the tree engine collects the entries, edits them, builds a new node
// and swaps the parent's pointer).
#pragma once

#include <string>

#include "index/art_engine/entries.h"
#include "index/artcow/artcow_layout.h"

namespace wort::artcow {

struct Node16Ops {
  static constexpr art_engine::NodeType kType = art_engine::NodeType::cow_node16;
  static constexpr std::size_t kBytes = sizeof(Node16);
  static constexpr unsigned kCapacity = 16;
  static constexpr bool kInPlace = false;
  static constexpr const char* kName = "node16";
  static constexpr bool kReusesSlots = false;  //!< entries change only by commits

  static Ref find(const NodeBase* n, std::uint8_t b) noexcept;
  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept;
  static unsigned count(const NodeBase* n) noexcept;
  static bool for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn);
  static void build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                    const art_engine::Entries& e) noexcept;
  //! Count within capacity, keys strictly ascending, no null child.
  static bool check(const NodeBase* n, std::string* why);
};

}  // namespace wort::artcow
