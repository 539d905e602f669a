// woart/woart_node16.h — WOART NODE16 (paper Algorithm 4): unsorted partial keys and
// pointers in parallel arrays, a 16-bit bitmap written last; searched with one SIMD
// compare masked by the bitmap.
#pragma once

#include <string>

#include "index/art_engine/entries.h"
#include "index/woart/woart_layout.h"

namespace wort::woart {

struct Node16Ops {
  static constexpr art_engine::NodeType kType = art_engine::NodeType::woart_node16;
  static constexpr std::size_t kBytes = sizeof(Node16);
  static constexpr unsigned kCapacity = 16;
  static constexpr bool kInPlace = true;
  static constexpr const char* kName = "node16";
  static constexpr bool kReusesSlots = true;  //!< see NodeOps::kReusesSlots (node_ops.h)

  static Ref find(const NodeBase* n, std::uint8_t b) noexcept;
  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept;
  static unsigned count(const NodeBase* n) noexcept;
  //! Sorts the (at most 16) valid entries on the fly: scans pay, inserts do not.
  static bool for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn);
  //! Some child and its key byte (the lowest position in the bitmap; kNull if none): a
  //! witness walk's step without for_each_from's sort of the unsorted entries.
  static Ref any_child(const NodeBase* n, std::uint8_t* b) noexcept;
  static void build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                    const art_engine::Entries& e) noexcept;
  //! Algorithm 4: key and pointer into a clear position, persist, bitmap (the commit,
  //! cached: publish_field_cached), persist. False if full.
  static bool add(NodeBase* n, std::uint8_t b, Ref r) noexcept;
  //! The bitmap (add's commit word).
  static const void* add_word(const NodeBase* n, std::uint8_t b) noexcept;
  //! Bitmap with b's bit clear (the commit), persist.
  static void remove(NodeBase* n, std::uint8_t b) noexcept;
  static bool check(const NodeBase* n, std::string* why);
};

}  // namespace wort::woart
