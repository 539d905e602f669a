// art_engine/node256.h — NODE256, shared by WOART and ART+CoW: one pointer per key byte, as
// in WORT (paper §3.2/§3.5); the pointer store is the commit of add and remove.
#pragma once

#include <cstdint>
#include <string>

#include "index/art_engine/art_layout.h"
#include "index/art_engine/entries.h"

namespace wort::art_engine {

struct Node256Ops {
  static constexpr NodeType kType = NodeType::node256;
  static constexpr std::size_t kBytes = sizeof(Node256);
  static constexpr unsigned kCapacity = 256;
  static constexpr bool kInPlace = true;
  static constexpr const char* kName = "node256";
  static constexpr bool kReusesSlots = false;  //!< entries change only by commits

  static Ref find(const NodeBase* n, std::uint8_t b) noexcept;
  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept;
  static unsigned count(const NodeBase* n) noexcept;
  static bool for_each_from(const NodeBase* n, unsigned from, ChildFn fn);
  static void build(NodeBase* dst, const NodeHeader& hdr, Ref eok, const Entries& e) noexcept;
  //! Fence (the new child before its pointer), pointer store (the commit, cached:
  //! release_to_readers + pm::publish), persist.
  static bool add(NodeBase* n, std::uint8_t b, Ref r) noexcept;
  //! The child word of b (add's commit word).
  static const void* add_word(const NodeBase* n, std::uint8_t b) noexcept;
  //! Null pointer store (the commit), persist.
  static void remove(NodeBase* n, std::uint8_t b) noexcept;
  static bool check(const NodeBase* n, std::string* why);
};

}  // namespace wort::art_engine
