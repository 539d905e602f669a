#include "index/artcow/artcow_node4.h"

#include <cstring>

#include "index/artcommon/node_image.h"

namespace wort::artcow {
namespace {
const Node4* as4(const NodeBase* n) { return reinterpret_cast<const Node4*>(n); }
Node4* as4(NodeBase* n) { return reinterpret_cast<Node4*>(n); }

int position_of(const Node4* x, std::uint8_t b) noexcept {
  for (unsigned i = 0; i < x->count && i < 4; ++i)
    if (x->key[i] == b) return static_cast<int>(i);
  return -1;
}
}  // namespace

Ref Node4Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node4* x = as4(n);
  const int p = position_of(x, b);
  return p < 0 ? artcommon::kNull : x->child[p];
}

Ref* Node4Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node4* x = as4(n);
  const int p = position_of(x, b);
  return p < 0 ? nullptr : &x->child[p];
}

unsigned Node4Ops::count(const NodeBase* n) noexcept { return as4(n)->count; }

bool Node4Ops::for_each_from(const NodeBase* n, unsigned from, artcommon::ChildFn fn) {
  const Node4* x = as4(n);
  for (unsigned i = 0; i < x->count && i < 4; ++i)
    if (x->key[i] >= from && !fn(x->key[i], x->child[i])) return false;
  return true;
}

void Node4Ops::build(NodeBase* dst, const artcommon::NodeHeader& hdr, Ref eok,
                     const artcommon::Entries& e) noexcept {
  Node4 img;
  artcommon::init_base(img.base, kType, hdr, eok);
  img.count = static_cast<std::uint8_t>(e.n);
  std::memset(img.key, 0, sizeof img.key);
  std::memset(img.pad, 0, sizeof img.pad);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.key[i] = e.bytes[i];
    img.child[i] = e.refs[i];
  }
  artcommon::publish_image(dst, &img, sizeof img);
}

bool Node4Ops::check(const NodeBase* n, std::string* why) {
  const Node4* x = as4(n);
  if (x->count > 4) return *why = "node4 count over capacity", false;
  for (unsigned i = 0; i < x->count; ++i) {
    if (i > 0 && x->key[i - 1] >= x->key[i]) return *why = "node4 keys not ascending", false;
    if (x->child[i] == artcommon::kNull) return *why = "node4 null child", false;
  }
  return true;
}

}  // namespace wort::artcow
