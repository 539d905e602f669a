#include "index/roart/roart_tree.h"

#include <algorithm>
#include <bit>

#include "index/common/anchor.h"
#include "index/registry.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::roart {

Roart::Roart(Pool& pool, Anchor* anchor)
    : pool_(pool), anchor_(anchor), flags_(anchor->flags), gen_(pool.generation()) {}

Result<std::unique_ptr<Roart>> Roart::create(Pool& pool, const IndexOptions& opts) {
  if ((opts.words[0] & ~kAllFlags) != 0 || opts.words[1] || opts.words[2] || opts.words[3])
    return Error{Status::invalid_argument, "roart: unknown create option bits"};
  Anchor img{};
  img.magic = kAnchorMagic;
  img.flags = opts.words[0];
  auto a = kit::create_anchor(pool, kKind, img);  // the create commit: the pool root
  if (!a) return a.error();
  return std::unique_ptr<Roart>(new Roart(pool, *a));
}

Result<std::unique_ptr<Roart>> Roart::open(Pool& pool) {
  auto a = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!a) return a.error();
  if (((*a)->flags & ~kAllFlags) != 0)
    return Error{Status::corrupt, "roart: anchor holds unknown option bits"};
  std::unique_ptr<Roart> t(new Roart(pool, *a));
  // The checked walk and the allocator's trace. The generation the pool bumped for this
  // open makes every node's metadata stale: each is rebuilt when first touched.
  if (auto r = kit::recover(pool, *t); !r) return r.error();
  return t;
}

NodeFlags Roart::node_flags() const noexcept {
  return NodeFlags{(flags_ & kNoEntryCompression) == 0, (flags_ & kNoSelectivePersist) == 0};
}

//! The generation check (§3.3.1): a node stamped with an older generation has metadata
//! from a previous session (possibly torn by a crash); rebuild it from the entries.
NodeBase* Roart::touch(Ref r) const {
  NodeBase* n = node(r);
  if (n->generation != gen_) [[unlikely]] {
    rebuild_node_meta(n, gen_);
    ++rebuilds_;
  }
  return n;
}

LeafArray* Roart::touch_array(Ref r) const {
  LeafArray* a = array(r);
  if (a->generation != gen_) [[unlikely]] {
    rebuild_array_meta(a, gen_);
    ++rebuilds_;
  }
  return a;
}

//! Slot of the leaf holding k (fingerprint filter, then the key), or -1.
int Roart::find_in_array(const LeafArray* a, Key k, std::uint16_t fp) const {
  for (std::uint64_t m = a->bitmap; m != 0; m &= m - 1) {
    const unsigned i = static_cast<unsigned>(std::countr_zero(m));
    const LeafSlot s = a->slot[i];
    if (s == 0 || slot_fp(s) != fp) continue;
    if (leaf_matches(slot_leaf_ptr(s), k)) return static_cast<int>(i);
  }
  return -1;
}

//! Some leaf of the subtree at r (for compressed-path bytes beyond the prefix word).
const Leaf* Roart::any_leaf(Ref r) const {
  while (r != kNull) {
    if (is_leaf(r)) return leaf(r);
    if (is_array(r)) {
      const LeafArray* a = array(r);
      for (unsigned i = 0; i < kArraySlots; ++i)
        if (a->slot[i] != 0) return slot_leaf_ptr(a->slot[i]);
      return nullptr;
    }
    const NodeBase* n = node(r);
    if (n->eok != kNull) return leaf(n->eok);
    Children c;
    collect_children(n, c);
    r = c.n ? c.ref[0] : kNull;
  }
  return nullptr;
}

//! The prefix word for key bytes [from, to) of w.
PrefixWord Roart::prefix_from(Key w, unsigned from, unsigned to) const {
  PrefixWord p{};
  p.len = static_cast<std::uint16_t>(to - from);
  for (unsigned i = 0; i < kStoredPrefix && from + i < to; ++i) p.bytes[i] = key_byte(w, from + i);
  return p;
}

//! Lookup with the pessimistic prefix: a consistent prefix word is compared byte by byte;
//! an inconsistent one (interrupted split/merge) is skipped, the leaf decides.
const Leaf* Roart::find_leaf(Key k) const {
  Ref r = anchor_->root;
  unsigned depth = 0;
  while (r != kNull) {
    if (is_leaf(r)) return leaf_matches(leaf(r), k) ? leaf(r) : nullptr;
    if (is_array(r)) {
      const LeafArray* a = touch_array(r);
      const int i = find_in_array(a, k, fingerprint(k));
      return i < 0 ? nullptr : slot_leaf_ptr(a->slot[i]);
    }
    NodeBase* n = touch(r);
    if (prefix_consistent(n, depth)) {
      const unsigned stored = std::min<unsigned>(n->prefix.len, kStoredPrefix);
      for (unsigned i = 0; i < stored; ++i)
        if (depth + i >= k.size() || key_byte(k, depth + i) != n->prefix.bytes[i]) return nullptr;
    }
    const unsigned pos = n->level;
    if (k.size() < pos) return nullptr;
    if (k.size() == pos) {
      r = n->eok;
      continue;
    }
    const ChildSlot cs = find_child(n, key_byte(k, pos));
    if (cs.word == nullptr) return nullptr;
    r = cs.get();
    depth = pos + 1;
  }
  return nullptr;
}

std::optional<Value> Roart::lookup(Key k) const {
  const Leaf* l = find_leaf(k);
  if (l == nullptr) return std::nullopt;
  return l->value;
}

Status Roart::update(Key k, Value v) {
  const Leaf* l = find_leaf(k);
  if (l == nullptr) return Status::not_found;
  commit_value(const_cast<Leaf*>(l), v);
  return Status::ok;
}

void Roart::free_ref(Ref r) { pool_.allocator().free(ref_offset(r)); }

IndexStats Roart::stats() const {
  IndexStats s;
  const pm::Allocator& al = pool_.allocator();
  s.pm_bytes = al.block_size(pool_.offset_of(anchor_));
  std::uint64_t depth_sum = 0;
  kit::CheckedWalk w(pool_, "roart");
  // Leaf depth = inner nodes above the leaf (a leaf array counts as no level).
  (void)w.run(anchor_->root, [&](std::uint64_t r, std::uint32_t level) {
    const std::uint64_t off = ref_offset(r);
    if (!w.enter(off, 16, 16, "block")) return;
    s.pm_bytes += al.block_size(off);
    if (is_leaf(r)) {
      ++s.keys;
      depth_sum += level;
      s.max_leaf_depth = std::max<std::uint64_t>(s.max_leaf_depth, level);
      ++s.nodes["leaf"];
      return;
    }
    if (is_array(r)) {
      if (!w.fits(off, off, sizeof(LeafArray), "leaf array")) return;
      ++s.nodes["leaf_array"];
      for (LeafSlot sl : array(r)->slot)
        if (sl != 0) w.push(slot_leaf(sl) | kTagLeaf, level);
      return;
    }
    const NodeBase* n = node(r);
    if (!is_inner_type(n->type) || !w.fits(off, off, node_bytes(n->type), "node")) {
      w.fail("bad node");
      return;
    }
    ++s.nodes[node_name(n->type)];
    if (n->eok != kNull) w.push(n->eok, level + 1);
    Children c;
    collect_children(n, c);
    for (unsigned i = 0; i < c.n; ++i) w.push(c.ref[i], level + 1);
  });
  s.avg_leaf_depth = s.keys ? static_cast<double>(depth_sum) / static_cast<double>(s.keys) : 0;
  return s;
}

static_assert(IndexConcept<Roart>);
WORT_REGISTER_INDEX(Roart);

}  // namespace wort::roart
