// roart/roart_scan.cc — ordered scans. Inner nodes are visited in byte order (eok first);
// a leaf array is unsorted inside, so its leaves (those >= the lower bound) are sorted by
// key before they are reported. The keys of an array share their first `depth` bytes, so
// each is sorted by the next 8 bytes as one big-endian integer (the paper's "comparing only
// the different parts of keys"), the whole keys compared only on a tie: insertion sort
// for the usual few leaves, std::sort above 16.
#include <algorithm>
#include <bit>
#include <cstring>
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
  if (!(*st.visit)(k, l->value.get())) return false;
  return st.count < st.max;
}

template <bool kChecked>
bool Roart::scan_ref(Ref r, unsigned depth, bool bounded, ScanState& st) const {
  if constexpr (kChecked) {
    if (!ref_ok(r)) return false;  // damage: the scan stops
    if (is_leaf(r)) {
      const Leaf* l = checked_leaf(r, depth);
      return l != nullptr && emit(l, bounded, st);
    }
    if (is_array(r)) return scan_array_checked(r, depth, bounded, st);
    const NodeBase* n = checked_node(r, depth);
    return n != nullptr && scan_node<true>(n, depth, bounded, st);
  } else {
    if (is_leaf(r)) return emit(leaf(r), bounded, st);
    if (is_array(r)) return scan_array<false>(touch_array(r), depth, bounded, st);
    return scan_node<false>(touch(r), depth, bounded, st);
  }
}

namespace {
struct SortItem {
  std::uint64_t digest;  //!< key bytes [depth, depth + 8), big-endian, zero-padded
  const Leaf* leaf;
};
std::uint64_t digest_at(const Leaf* l, unsigned depth) noexcept {
  std::uint64_t d = 0;
  const unsigned len = l->key_len;
  if (depth + 8 <= len) {
    std::memcpy(&d, l->key + depth, 8);
    return __builtin_bswap64(d);
  }
  if (depth >= len) return 0;
  if (len >= 8) {  // the key's last 8 bytes, shifted so that byte `depth` leads
    std::memcpy(&d, l->key + len - 8, 8);
    return __builtin_bswap64(d) << 8 * (depth + 8 - len);
  }
  for (unsigned i = depth; i < depth + 8; ++i)
    d = d << 8 | (i < len ? static_cast<std::uint8_t>(l->key[i]) : 0u);
  return d;
}
bool sort_less(const SortItem& x, const SortItem& y) noexcept {
  if (x.digest != y.digest) return x.digest < y.digest;
  return compare_keys(leaf_key(x.leaf), leaf_key(y.leaf)) < 0;
}
}  // namespace

template <bool kHooked>
bool Roart::scan_array(const LeafArray* a, unsigned depth, bool bounded, ScanState& st) const {
#if WORT_FAULTS
  if constexpr (!kHooked) {
    if (WORT_FAULT_HOOK_SET(g_scan_slot_hook)) [[unlikely]]
      return scan_array<true>(a, depth, bounded, st);
  }
#endif
  SortItem it[kArraySlots];
  unsigned n = 0;
  for (unsigned i = 0; i < a->cap; ++i) {
    const LeafSlot s = a->slot[i];
    if (s == 0) continue;
    const Leaf* l = slot_leaf_ptr(s);  // (an array's slots are read once, atomically)
#if WORT_FAULTS
    // Tests only: the window of the third churn race (a key moved to a later slot).
    if constexpr (kHooked) call_race_hook(g_scan_slot_hook, g_scan_slot_ctx);
#endif
    if (bounded && compare_keys(leaf_key(l), st.lo) < 0) continue;
    it[n++] = {digest_at(l, depth), l};
  }
  if (n > 16) {
    std::sort(it, it + n, sort_less);
  } else {
    for (unsigned i = 1; i < n; ++i) {
      const SortItem x = it[i];
      unsigned j = i;
      for (; j > 0 && sort_less(x, it[j - 1]); --j) it[j] = it[j - 1];
      it[j] = x;
    }
  }
  for (unsigned i = 0; i < n; ++i) {
    // A key removed from one slot and inserted again into another while the slots were read
    // is in the snapshot twice (adjacent once sorted): report it once (the churn test
    // saw it as a scan out of order, ~1 run in 300 on a quiet machine).
    if (i > 0 && compare_keys(leaf_key(it[i].leaf), leaf_key(it[i - 1].leaf)) == 0 &&
        !(kHooked && WORT_FAULT(g_broken_scan_reports_twice)))
      continue;
    if (!emit(it[i].leaf, false, st)) return false;
  }
  return true;
}

template <bool kChecked>
bool Roart::scan_node(const NodeBase* n, unsigned depth, bool bounded, ScanState& st) const {
  const unsigned pos = n->level;
  int bound_byte = -1;  // the child that stays bounded
  if (bounded) {
    // The lower bound against the node's compressed path (bytes from any leaf).
    Key w{};
    if (pos > depth) {
      if constexpr (kChecked) {
        const Leaf* l = checked_any_leaf(n);  // a leaf at least pos bytes long, or damage
        if (l == nullptr) return false;
        w = leaf_key(l);
      } else {
        w = leaf_key(any_leaf(pool_.offset_of(n)));
      }
    }
    for (unsigned i = depth; i < pos; ++i) {
      if (i >= st.lo.size()) return scan_node<kChecked>(n, depth, false, st);  // lo is a prefix
      if (st.lo[i] != w[i]) {
        if (key_byte(st.lo, i) > key_byte(w, i)) return true;  // whole subtree below lo
        return scan_node<kChecked>(n, depth, false, st);       // whole subtree above lo
      }
    }
    if (st.lo.size() == pos) bounded = false;  // eok == lo, every child above it
    else bound_byte = key_byte(st.lo, pos);
  }
  if (const Ref e = n->eok; e != kNull && !bounded) {
    if constexpr (kChecked) {
      const Leaf* l = checked_leaf(e, pos);  // (checked_node: a leaf's tag)
      if (l == nullptr || !emit(l, false, st)) return false;
    } else if (!emit(leaf(e), false, st)) {
      return false;
    }
  }
  auto child = [&](unsigned b, Ref c) {
    if (static_cast<int>(b) < bound_byte) return true;
    return scan_ref<kChecked>(c, pos + 1, bounded && static_cast<int>(b) == bound_byte, st);
  };
  if (n->type == NodeType::n256) {
    const Shared<Ref>* c = reinterpret_cast<const Node256*>(n)->child;
    for (unsigned b = bound_byte < 0 ? 0 : static_cast<unsigned>(bound_byte); b < 256; ++b)
      if (const Ref r = c[b]; r != kNull && !child(b, r)) return false;
    return true;
  }
  if (!kChecked && n->type == NodeType::n48) {  // (checked: no metadata, the entries below)
    const auto* n48 = reinterpret_cast<const Node48*>(n);
    for (unsigned b = bound_byte < 0 ? 0 : static_cast<unsigned>(bound_byte); b < 256; ++b) {
      const unsigned i = n48->index[b];
      const Zentry e = i == 0 || i > 48 ? 0 : n48->entry[i - 1].get();
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
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]]
    return scan_checked(from, nullptr, max, v);
  ScanPin g(epochs_);  // the visitor may call back into the tree
  const Ref root = anchor_->root;
  if (max == 0 || root == kNull) return 0;
  ScanState st;
  st.lo = from;
  st.max = max;
  st.visit = &v;
  scan_ref<false>(root, 0, true, st);
  return st.count;
}

std::size_t Roart::range(Key lo, Key hi, Visitor v) const {
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]]
    return scan_checked(lo, &hi, std::numeric_limits<std::size_t>::max(), v);
  ScanPin g(epochs_);  // the visitor may call back into the tree
  const Ref root = anchor_->root;
  if (root == kNull || compare_keys(lo, hi) >= 0) return 0;
  ScanState st;
  st.lo = lo;
  st.hi = hi;
  st.has_hi = true;
  st.max = std::numeric_limits<std::size_t>::max();
  st.visit = &v;
  scan_ref<false>(root, 0, true, st);
  return st.count;
}

//! scan / range before open_instant's checked walk has passed: every word checked first.
std::size_t Roart::scan_checked(Key lo, const Key* hi, std::size_t max, Visitor& v) const {
  ScanPin g(epochs_);
  if (mode_.load(std::memory_order_acquire) == kRefused) return 0;
  const Ref root = anchor_->root;
  if (max == 0 || root == kNull || (hi != nullptr && compare_keys(lo, *hi) >= 0)) return 0;
  ScanState st;
  st.lo = lo;
  if (hi != nullptr) {
    st.hi = *hi;
    st.has_hi = true;
  }
  st.max = max;
  st.visit = &v;
  scan_ref<true>(root, 0, true, st);
  return st.count;
}

//! A leaf array, checked (the array, then each used slot's leaf, before any is reported).
//! Its slots are then read again by scan_array: while the walk has not passed nothing
//! writes them, and once it has, a writer's words are sound.
bool Roart::scan_array_checked(Ref r, unsigned depth, bool bounded, ScanState& st) const {
  const LeafArray* a = checked_array(r);
  if (a == nullptr) return false;
  for (unsigned i = 0; i < a->cap; ++i)
    if (const LeafSlot s = a->slot[i]; s != 0 && checked_slot_leaf(s, depth) == nullptr)
      return false;
  return scan_array<false>(a, depth, bounded, st);
}

}  // namespace wort::roart
