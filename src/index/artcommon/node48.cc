#include "index/artcommon/node48.h"

#include <bit>

#include "index/artcommon/node_image.h"
#include "index/artcommon/node_lock.h"
#include "index/artcommon/sync.h"
#include "pm/persist.h"

namespace wort::artcommon {
namespace {
const Node48* as48(const NodeBase* n) { return reinterpret_cast<const Node48*>(n); }
Node48* as48(NodeBase* n) { return reinterpret_cast<Node48*>(n); }

//! Bit i set if some index byte names slot i (the only trustworthy record of use).
std::uint64_t used_slots(const Node48* n) noexcept {
  std::uint64_t used = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const std::uint8_t i = load(&n->index[b]);
    if (i != 0) used |= std::uint64_t{1} << (i - 1);
  }
  return used;
}
}  // namespace

Ref Node48Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node48* x = as48(n);
  for (;;) {
    const std::uint8_t i = load_committed_byte(&x->index[b]);
    if (i == 0) return kNull;
    const Ref r = load(&x->child[i - 1]);
    // A slot reused since the index byte was read may hold an uncommitted leaf (node_ops.h).
    if (!is_leaf(r) || load_committed_byte(&x->index[b]) == i) [[likely]] return r;
  }
}

Ref* Node48Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node48* x = as48(n);
  const std::uint8_t i = load(&x->index[b]);
  return i == 0 ? nullptr : &x->child[i - 1];
}

unsigned Node48Ops::count(const NodeBase* n) noexcept {
  return static_cast<unsigned>(std::popcount(used_slots(as48(n))));
}

bool Node48Ops::for_each_from(const NodeBase* n, unsigned from, ChildFn fn) {
  const Node48* x = as48(n);
  for (unsigned b = from; b < 256; ++b) {
    const std::uint8_t i = load_committed_byte(&x->index[b]);
    if (i != 0 && !fn(static_cast<std::uint8_t>(b), load(&x->child[i - 1]))) return false;
  }
  return true;
}

void Node48Ops::build(NodeBase* dst, const NodeHeader& hdr, Ref eok, const Entries& e) noexcept {
  Node48 img;
  init_base(img.base, kType, hdr, eok);
  std::memset(img.index, 0, sizeof img.index);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.child[i] = e.refs[i];
    img.index[e.bytes[i]] = static_cast<std::uint8_t>(i + 1);
  }
  publish_image(dst, &img, sizeof img);
}

bool Node48Ops::add(NodeBase* n, std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(artcommon::type_of(n) == kType && r != kNull && find(n, b) == kNull);
  Node48* x = as48(n);
  const std::uint64_t used = used_slots(x);
  if (used == (std::uint64_t{1} << 48) - 1) return false;
  const unsigned i = static_cast<unsigned>(std::countr_one(used));
  pm::store(&x->child[i], r);
  pm::flush(&x->child[i], sizeof(Ref));
  // The pointer (and the new child) before the index byte that publishes it.
  publish_field(&x->index[b], static_cast<std::uint8_t>(i + 1));
  return true;
}

void Node48Ops::remove(NodeBase* n, std::uint8_t b) noexcept {
  WORT_DCHECK(artcommon::type_of(n) == kType && find(n, b) != kNull);
  Node48* x = as48(n);
  commit_field(&x->index[b], std::uint8_t{0});
}

bool Node48Ops::check(const NodeBase* n, std::string* why) {
  const Node48* x = as48(n);
  std::uint64_t seen = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const unsigned i = x->index[b];
    if (i == 0) continue;
    if (i > 48) return *why = "node48 index byte out of range", false;
    const std::uint64_t bit = std::uint64_t{1} << (i - 1);
    if (seen & bit) return *why = "node48 slot named twice", false;
    seen |= bit;
    if (x->child[i - 1] == kNull) return *why = "node48 null child", false;
  }
  return true;
}

}  // namespace wort::artcommon
