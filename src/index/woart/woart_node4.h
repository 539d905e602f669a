// woart/woart_node4.h — WOART NODE4 (paper Algorithm 3): append-only pointers, sorted
// partial keys and slot indices in one 8-byte word written last.
#pragma once

#include <string>

#include "index/art_engine/entries.h"
#include "index/woart/woart_layout.h"

namespace wort::woart {

struct Node4Ops {
  static constexpr art_engine::NodeType kType = art_engine::NodeType::woart_node4;
  static constexpr std::size_t kBytes = sizeof(Node4);
  static constexpr unsigned kCapacity = 4;
  static constexpr bool kInPlace = true;
  static constexpr const char* kName = "node4";
  static constexpr bool kReusesSlots = true;  //!< see NodeOps::kReusesSlots (node_ops.h)

  static Ref find(const NodeBase* n, std::uint8_t b) noexcept;
  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept;
  static unsigned count(const NodeBase* n) noexcept;
  static bool for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn);
  static void build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                    const art_engine::Entries& e) noexcept;
  //! Algorithm 3: pointer, persist, slot word (the commit, cached: pm::publish),
  //! persist. False if full.
  static bool add(NodeBase* n, std::uint8_t b, Ref r) noexcept;
  //! The slot word (add's commit word).
  static const void* add_word(const NodeBase* n, std::uint8_t b) noexcept;
  //! Slot word without b (the commit), persist.
  static void remove(NodeBase* n, std::uint8_t b) noexcept;
  static bool check(const NodeBase* n, std::string* why);
};

}  // namespace wort::woart
