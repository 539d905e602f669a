#include "index/artcow/artcow_node4.h"

#include "index/artcow/artcow_sorted_node.h"

namespace wort::artcow {
namespace {
int position_of(const Node4* x, std::uint8_t b) noexcept {
  for (unsigned i = 0; i < x->count && i < 4; ++i)
    if (x->key[i] == b) return static_cast<int>(i);
  return -1;
}
using Sorted = SortedNode<Node4, 4, &position_of>;
}  // namespace

Ref Node4Ops::find(const NodeBase* n, std::uint8_t b) noexcept { return Sorted::find(n, b); }
Ref* Node4Ops::slot(NodeBase* n, std::uint8_t b) noexcept { return Sorted::slot(n, b); }
unsigned Node4Ops::count(const NodeBase* n) noexcept { return Sorted::count(n); }
bool Node4Ops::for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn) {
  return Sorted::for_each_from(n, from, fn);
}
void Node4Ops::build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                     const art_engine::Entries& e) noexcept {
  Sorted::build(dst, kType, hdr, eok, e);
}
bool Node4Ops::check(const NodeBase* n, std::string* why) { return Sorted::check(n, kName, why); }

}  // namespace wort::artcow
