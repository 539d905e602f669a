// roart/roart_scan.cc — ordered scans. Inner nodes are visited in byte order (eok first);
// a leaf array is unsorted inside, so its leaves (those >= the lower bound) are sorted by
// key before they are reported: at most 64 keys per array, one std::sort of pointers.
#include <algorithm>
#include <bit>
#include <limits>

#include "index/roart/roart_tree.h"

namespace wort::roart {

struct Roart::ScanState {
  Key lo;
  Key hi;
  bool has_hi = false;
  std::size_t max = 0;
  std::size_t count = 0;
  Visitor* visit = nullptr;
};

//! Reports one leaf; false once the scan is finished.
bool Roart::emit(const Leaf* l, bool bounded, ScanState& st) const {
  const Key k = leaf_key(l);
  if (bounded && compare_keys(k, st.lo) < 0) return true;
  if (st.has_hi && compare_keys(k, st.hi) >= 0) return false;
  ++st.count;
  if (!(*st.visit)(k, l->value)) return false;
  return st.count < st.max;
}

bool Roart::scan_ref(Ref r, unsigned depth, bool bounded, ScanState& st) const {
  if (is_leaf(r)) return emit(leaf(r), bounded, st);
  if (is_array(r)) return scan_array(touch_array(r), bounded, st);
  return scan_node(touch(r), depth, bounded, st);
}

bool Roart::scan_array(const LeafArray* a, bool bounded, ScanState& st) const {
  const Leaf* ls[kArraySlots];
  unsigned n = 0;
  for (std::uint64_t m = a->bitmap; m != 0; m &= m - 1) {
    const LeafSlot s = a->slot[std::countr_zero(m)];
    if (s == 0) continue;
    const Leaf* l = slot_leaf_ptr(s);
    if (bounded && compare_keys(leaf_key(l), st.lo) < 0) continue;
    ls[n++] = l;
  }
  std::sort(ls, ls + n, [](const Leaf* x, const Leaf* y) {
    return compare_keys(leaf_key(x), leaf_key(y)) < 0;
  });
  for (unsigned i = 0; i < n; ++i)
    if (!emit(ls[i], false, st)) return false;
  return true;
}

bool Roart::scan_node(NodeBase* n, unsigned depth, bool bounded, ScanState& st) const {
  const unsigned pos = n->level;
  int bound_byte = -1;  // the child that stays bounded
  if (bounded) {
    // The lower bound against the node's compressed path (bytes from any leaf).
    const Key w = pos > depth ? leaf_key(any_leaf(pool_.offset_of(n))) : Key{};
    for (unsigned i = depth; i < pos; ++i) {
      if (i >= st.lo.size()) return scan_node(n, depth, false, st);  // lo is a prefix
      if (st.lo[i] != w[i]) {
        if (key_byte(st.lo, i) > key_byte(w, i)) return true;  // whole subtree below lo
        return scan_node(n, depth, false, st);                 // whole subtree above lo
      }
    }
    if (st.lo.size() == pos) bounded = false;  // eok == lo, every child above it
    else bound_byte = key_byte(st.lo, pos);
  }
  if (n->eok != kNull && !bounded && !emit(leaf(n->eok), false, st)) return false;
  auto child = [&](unsigned b, Ref c) {
    if (static_cast<int>(b) < bound_byte) return true;
    return scan_ref(c, pos + 1, bounded && static_cast<int>(b) == bound_byte, st);
  };
  if (n->type == NodeType::n256) {
    const Ref* c = reinterpret_cast<const Node256*>(n)->child;
    for (unsigned b = bound_byte < 0 ? 0 : static_cast<unsigned>(bound_byte); b < 256; ++b)
      if (c[b] != kNull && !child(b, c[b])) return false;
    return true;
  }
  if (n->type == NodeType::n48) {
    const auto* n48 = reinterpret_cast<const Node48*>(n);
    for (unsigned b = bound_byte < 0 ? 0 : static_cast<unsigned>(bound_byte); b < 256; ++b) {
      const unsigned i = n48->index[b];
      const Zentry e = i == 0 ? 0 : n48->entry[i - 1];
      if (e != 0 && zentry_byte(e) == b && !child(b, zentry_ref(e)))
        return false;
    }
    return true;
  }
  Children c;
  collect_children(n, c);
  for (unsigned i = 0; i < c.n; ++i)
    if (!child(c.byte[i], c.ref[i])) return false;
  return true;
}

std::size_t Roart::scan(Key from, std::size_t max, Visitor v) const {
  if (max == 0 || anchor_->root == kNull) return 0;
  ScanState st;
  st.lo = from;
  st.max = max;
  st.visit = &v;
  scan_ref(anchor_->root, 0, true, st);
  return st.count;
}

std::size_t Roart::range(Key lo, Key hi, Visitor v) const {
  if (anchor_->root == kNull || compare_keys(lo, hi) >= 0) return 0;
  ScanState st;
  st.lo = lo;
  st.hi = hi;
  st.has_hi = true;
  st.max = std::numeric_limits<std::size_t>::max();
  st.visit = &v;
  scan_ref(anchor_->root, 0, true, st);
  return st.count;
}

}  // namespace wort::roart
