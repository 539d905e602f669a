#include "index/art_engine/node256.h"

#include "index/art_engine/node_image.h"
#include "index/art_engine/node_lock.h"
#include "index/art_engine/sync.h"
#include "pm/persist.h"

namespace wort::art_engine {
namespace {
const Node256* as256(const NodeBase* n) { return reinterpret_cast<const Node256*>(n); }
Node256* as256(NodeBase* n) { return reinterpret_cast<Node256*>(n); }
}  // namespace

Ref Node256Ops::find(const NodeBase* n, std::uint8_t b) noexcept { return load(&as256(n)->child[b]); }

Ref* Node256Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node256* x = as256(n);
  return load(&x->child[b]) == kNull ? nullptr : &x->child[b];
}

unsigned Node256Ops::count(const NodeBase* n) noexcept {
  const Node256* x = as256(n);
  unsigned c = 0;
  for (const Ref& r : x->child) c += load(&r) != kNull;
  return c;
}

bool Node256Ops::for_each_from(const NodeBase* n, unsigned from, ChildFn fn) {
  const Node256* x = as256(n);
  for (unsigned b = from; b < 256; ++b) {
    const Ref r = load(&x->child[b]);
    if (r != kNull && !fn(static_cast<std::uint8_t>(b), r)) return false;
  }
  return true;
}

void Node256Ops::build(NodeBase* dst, const NodeHeader& hdr, Ref eok, const Entries& e) noexcept {
  Node256 img;
  init_base(img.base, kType, hdr, eok);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) img.child[e.bytes[i]] = e.refs[i];
  write_image(dst, &img, sizeof img);
}

bool Node256Ops::add(NodeBase* n, std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && r != kNull && find(n, b) == kNull);
  Node256* x = as256(n);
  // The new child is durable before the pointer that reaches it.
  release_to_readers(&x->child[b]);
  pm::publish(&x->child[b], r);
  return true;
}

const void* Node256Ops::add_word(const NodeBase* n, std::uint8_t b) noexcept {
  return &as256(n)->child[b];
}

void Node256Ops::remove(NodeBase* n, std::uint8_t b) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && find(n, b) != kNull);
  Node256* x = as256(n);
  pm::commit_nt(&x->child[b], kNull);
}

bool Node256Ops::check(const NodeBase*, std::string*) { return true; }

}  // namespace wort::art_engine
