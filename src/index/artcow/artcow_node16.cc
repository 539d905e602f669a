#include "index/artcow/artcow_node16.h"

#include <bit>

#include "index/kit/match16.h"
#include "index/artcow/artcow_sorted_node.h"

namespace wort::artcow {
namespace {
//! SIMD compare of all 16 keys, masked to the first `count`.
int position_of(const Node16* x, std::uint8_t b) noexcept {
  const unsigned c = x->count < 16 ? x->count : 16;
  const std::uint32_t m = kit::match16(x->key, b) & ((1u << c) - 1);
  return m == 0 ? -1 : std::countr_zero(m);
}
using Sorted = SortedNode<Node16, 16, &position_of>;
}  // namespace

Ref Node16Ops::find(const NodeBase* n, std::uint8_t b) noexcept { return Sorted::find(n, b); }
Ref* Node16Ops::slot(NodeBase* n, std::uint8_t b) noexcept { return Sorted::slot(n, b); }
unsigned Node16Ops::count(const NodeBase* n) noexcept { return Sorted::count(n); }
bool Node16Ops::for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn) {
  return Sorted::for_each_from(n, from, fn);
}
void Node16Ops::build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                      const art_engine::Entries& e) noexcept {
  Sorted::build(dst, kType, hdr, eok, e);
}
bool Node16Ops::check(const NodeBase* n, std::string* why) { return Sorted::check(n, kName, why); }

}  // namespace wort::artcow
