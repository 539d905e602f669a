#include "index/artcow/artcow_node16.h"

#include <bit>
#include <cstring>

#include "index/artcommon/match16.h"
#include "index/artcommon/node_image.h"

namespace wort::artcow {
namespace {
const Node16* as16(const NodeBase* n) { return reinterpret_cast<const Node16*>(n); }
Node16* as16(NodeBase* n) { return reinterpret_cast<Node16*>(n); }

//! SIMD compare of all 16 keys, masked to the first `count`.
int position_of(const Node16* x, std::uint8_t b) noexcept {
  const unsigned c = x->count < 16 ? x->count : 16;
  const std::uint32_t m = artcommon::match16(x->key, b) & ((1u << c) - 1);
  return m == 0 ? -1 : std::countr_zero(m);
}
}  // namespace

Ref Node16Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node16* x = as16(n);
  const int p = position_of(x, b);
  return p < 0 ? artcommon::kNull : x->child[p];
}

Ref* Node16Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node16* x = as16(n);
  const int p = position_of(x, b);
  return p < 0 ? nullptr : &x->child[p];
}

unsigned Node16Ops::count(const NodeBase* n) noexcept { return as16(n)->count; }

bool Node16Ops::for_each_from(const NodeBase* n, unsigned from, artcommon::ChildFn fn) {
  const Node16* x = as16(n);
  for (unsigned i = 0; i < x->count && i < 16; ++i)
    if (x->key[i] >= from && !fn(x->key[i], x->child[i])) return false;
  return true;
}

void Node16Ops::build(NodeBase* dst, const artcommon::NodeHeader& hdr, Ref eok,
                      const artcommon::Entries& e) noexcept {
  Node16 img;
  artcommon::init_base(img.base, kType, hdr, eok);
  img.count = static_cast<std::uint8_t>(e.n);
  std::memset(img.pad, 0, sizeof img.pad);
  std::memset(img.key, 0, sizeof img.key);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.key[i] = e.bytes[i];
    img.child[i] = e.refs[i];
  }
  artcommon::publish_image(dst, &img, sizeof img);
}

bool Node16Ops::check(const NodeBase* n, std::string* why) {
  const Node16* x = as16(n);
  if (x->count > 16) return *why = "node16 count over capacity", false;
  for (unsigned i = 0; i < x->count; ++i) {
    if (i > 0 && x->key[i - 1] >= x->key[i]) return *why = "node16 keys not ascending", false;
    if (x->child[i] == artcommon::kNull) return *why = "node16 null child", false;
  }
  return true;
}

}  // namespace wort::artcow
