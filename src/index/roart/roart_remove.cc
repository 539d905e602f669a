// roart/roart_remove.cc — remove: from a leaf array (its slot := 0), of an array's last
// leaf or a bare leaf (the node's entry := 0), of an eok leaf, with shrink (a smaller copy
// published in the parent's slot: N16→N4 at 3 children, N48→N16 at 12, N256→N48 at 37)
// and merge (a node left with one entry is replaced by it in the parent's slot; a node
// survivor first gets its longer prefix word, written back under the commit's fence —
// either store alone leaves a state the level check exposes and writers repair).
// Unlinked blocks are freed only after the commit is durable.
#include <bit>

#include "index/roart/roart_tree.h"
#include "index/roart/roart_lock.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::roart {
namespace {
NodeType shrunk_type(NodeType t, unsigned remaining) {
  if (t == NodeType::n16 && remaining <= 3) return NodeType::n4;
  if (t == NodeType::n48 && remaining <= 12) return NodeType::n16;
  if (t == NodeType::n256 && remaining <= 37) return NodeType::n48;
  return t;
}
}  // namespace

//! ROWEX as in put: down without locks, then the locks of the node the key hangs from, its
//! owner (a shrink or merge replaces the node in the owner's slot) and an array the key is
//! in; checked, and decided again under them; a restart if anything changed.
Status Roart::remove(Key k) {
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]]
    if (const Status s = await_walk(); s != Status::ok) return s;
  OpPin g(epochs_);
  Status s = Status::ok;
  while (!remove_once(k, &s)) {
  }
  return s;
}

//! One attempt; false: restart. A root that is a leaf or an array changes under the root
//! lock; else the descent goes down without locks to the node the key hangs from (its eok,
//! a leaf child or an array child), which changes under its owner's lock and its own.
bool Roart::remove_once(Key k, Status* out) {
  ChildSlot slot{&anchor_->root.raw, false};
  const Ref root = slot.get();
  *out = Status::not_found;
  if (root == kNull) return true;
  if (is_leaf(root) || is_array(root)) return remove_at_root(slot, root, k, out);
  NodeBase* owner = nullptr;
  unsigned depth = 0;
  for (;;) {
    const Ref r = slot.get();
    if (!is_node(r)) return false;  // replaced under us (e.g. merged away): restart
    NodeBase* n = touch(r);
    const unsigned pos = n->level;
    if (pos < depth) {
      *out = Status::corrupt;
      return true;
    }
    const PrefixWord p = n->prefix;  // one load: a split may change it meanwhile
    if (depth + p.len == pos && prefix_mismatch(n, p, depth, k) < p.len)
      return true;  // not found (an inconsistent prefix is checked under the locks)
    if (k.size() < pos) return true;
    if (k.size() > pos) {
      const ChildSlot cs = find_child(n, key_byte(k, pos));
      if (cs.word == nullptr) return true;
      if (is_node(cs.get())) {
        owner = n;
        slot = cs;
        depth = pos + 1;
        continue;
      }
    }
    // The key hangs from n (its eok, a leaf child, or in an array child).
    return remove_at_node(owner, slot, r, n, depth, k, out);
  }
}

//! remove_once at a root that is a leaf or a leaf array, under the root lock.
bool Roart::remove_at_root(ChildSlot slot, Ref root, Key k, Status* out) {
  WriteLocks l(gen_);
  if (!l.lock(&root_lock_) || slot.get() != root) return false;
  if (is_array(root)) {
    if (!l.lock(&touch_array(root)->lock)) return false;
    *out = remove_in_array(l, slot, nullptr, slot, 0, 0, k);
    return true;
  }
  if (!leaf_matches(leaf(root), k)) return true;
  pm::commit_nt(slot.word, Ref{kNull});
  free_ref(root);
  *out = Status::ok;
  return true;
}

//! remove_once at node n (in `slot` of `owner`, at `depth`), which k hangs from: under the
//! locks of the owner and n, decided again — n's eok, a leaf child, or in an array child.
bool Roart::remove_at_node(NodeBase* owner, ChildSlot slot, Ref r, NodeBase* n, unsigned depth,
                           Key k, Status* out) {
  const unsigned pos = n->level;  // constant
  WriteLocks l(gen_);
  if (!l.lock(owner_lock(owner)) || slot.get() != r || !l.lock(&n->lock)) return false;
  if (!prefix_consistent(n, depth)) repair_prefix(n, depth);
  const PrefixWord lp = n->prefix;  // stable now: only lock holders change it
  if (prefix_mismatch(n, lp, depth, k) < lp.len) return true;
  if (k.size() == pos) {
    const Ref e = n->eok;
    if (e == kNull || !leaf_matches(leaf(e), k)) return true;
    *out = remove_eok(l, slot, n, depth);
    return true;
  }
  const std::uint8_t b = key_byte(k, pos);
  const ChildSlot cs = find_child(n, b);
  if (cs.word == nullptr) return true;
  const Ref c = cs.get();
  if (is_node(c)) return false;  // an array split meanwhile: restart
  if (is_leaf(c)) {
    if (!leaf_matches(leaf(c), k)) return true;
    *out = remove_child(l, slot, n, depth, b, cs);
    return true;
  }
  if (!l.lock(&touch_array(c)->lock)) return false;
  if (cs.get() != c) return false;
  *out = remove_in_array(l, cs, n, slot, depth, b, k);
  return true;
}

//! k in the array at `aslot` (under byte b of `parent`, or the root if parent is null):
//! the array's slot is the commit, unless it is the array's last leaf: then the array goes.
Status Roart::remove_in_array(WriteLocks& l, ChildSlot aslot, NodeBase* parent,
                              ChildSlot parent_slot, unsigned parent_depth, std::uint8_t b,
                              Key k) {
  const Ref ar = aslot.get();
  LeafArray* a = touch_array(ar);
  const int i = find_in_array(a, k, fingerprint(k));
  if (i < 0) return Status::not_found;
  const std::uint64_t lf = slot_leaf(a->slot[i].get());
  const unsigned remaining = static_cast<unsigned>(std::popcount(a->bitmap.get())) - 1;
  if (remaining > 0) {
    if (remaining * 2 <= smaller_cap(a->cap) &&
        shrink_array(l, aslot, a, static_cast<unsigned>(i)))
      return Status::ok;
    remove_from_array(a, static_cast<unsigned>(i), node_flags());
    epochs_.retire(lf);
    return Status::ok;
  }
  if (parent == nullptr) {  // the root array
    pm::commit_nt(aslot.word, Ref{kNull});
    l.obsolete(&a->lock);
    epochs_.retire(lf);
    free_ref(ar);
    return Status::ok;
  }
  return remove_child(l, parent_slot, parent, parent_depth, b, aslot);
}

//! An array left at most half as full as the size below it: a copy of that size without
//! slot i, published in the parent's slot (64→28 at 14 leaves, 28→12 at 6, 12→4 at 2).
//! False (nothing changed) if there is no space for the copy: the caller removes in place.
bool Roart::shrink_array(WriteLocks& l, ChildSlot aslot, LeafArray* a, unsigned i) {
  ArrayItem items[kArraySlots];
  const std::uint64_t victim = slot_leaf(a->slot[i].get());
  unsigned n = 0;
  for (unsigned j = 0; j < a->cap; ++j) {
    const LeafSlot s = a->slot[j];
    if (s != 0 && j != i) items[n++] = {slot_fp(s), slot_leaf(s)};
  }
  Ref smaller;
  if (make_array(items, n, &smaller) != Status::ok) return false;
  const Ref old = aslot.get();
  pm::publish_nt(aslot.word, aslot.encode(smaller));
  l.obsolete(&a->lock);
  free_ref(old);
  epochs_.retire(victim);
  return true;
}

//! Retires a child that held only the removed key: a leaf, or an array of one leaf (whose
//! lock the write holds: it is marked obsolete).
void Roart::free_victim(WriteLocks& l, Ref v) {
  if (is_array(v)) {
    LeafArray* a = array(v);
    for (unsigned i = 0; i < a->cap; ++i)
      if (const LeafSlot s = a->slot[i]; s != 0) epochs_.retire(slot_leaf(s));
    l.obsolete(&a->lock);
  }
  free_ref(v);
}

//! Removes the child at cs (byte b of n, which `slot` holds, reached at depth).
Status Roart::remove_child(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth,
                           std::uint8_t b, ChildSlot cs) {
  const Ref victim = cs.get();
  const unsigned children = n->count;
  if (children - 1 + (n->eok.get() != kNull) == 1) {  // one entry left: merge n away
    Ref survivor = n->eok;
    if (survivor == kNull) {
      Children c;
      collect_children(n, c);
      survivor = c.byte[0] == b ? c.ref[1] : c.ref[0];
    }
    if (Status s = merge(l, slot, n, depth, survivor); s != Status::ok) return s;
    free_victim(l, victim);
    return Status::ok;
  }
  const NodeType t = shrunk_type(n->type, children - 1);
  Children c;
  Ref smaller = kNull;
  if (t != n->type) {
    collect_children(n, c);
    c.erase(b);
    // Shrinking is an optimisation: without space for the smaller copy, remove in place.
    if (make_node(t, n->level, n->prefix, n->eok, c, &smaller) != Status::ok) smaller = kNull;
  }
  if (smaller == kNull) {
    remove_child_in_place(n, cs, b, node_flags());
  } else {
    const Ref old = slot.get();
    pm::publish_nt(slot.word, slot.encode(smaller));
    l.obsolete(&n->lock);
    free_ref(old);
  }
  free_victim(l, victim);
  return Status::ok;
}

//! Removes n's eok leaf (in place unless n is left with a single child: merge).
Status Roart::remove_eok(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth) {
  const Ref victim = n->eok;
  if (n->count == 1) {
    Children c;
    collect_children(n, c);
    if (Status s = merge(l, slot, n, depth, c.ref[0]); s != Status::ok) return s;
  } else {
    pm::commit_nt(&n->eok.raw, Ref{kNull});
  }
  free_ref(victim);
  return Status::ok;
}

//! Replaces n (in `slot`, reached at depth) by its only remaining entry. A node survivor
//! keeps its level and takes the longer prefix word [depth, level) first.
//! Holding n's lock keeps every writer off the survivor (a write at a child of n locks n as
//! the owner of its slot), so its prefix word is ours to change.
Status Roart::merge(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth, Ref survivor) {
  // slot names n, whose lock is held; the survivor is another block.
  WORT_DCHECK(ref_offset(slot.get()) == pool_.offset_of(n) && is_node(slot.get()));
  WORT_DCHECK(lock_held(n->lock.get(), gen_) && survivor != kNull && survivor != slot.get());
  if (is_node(survivor)) {
    // The survivor's prefix word and the parent's slot under the commit's one fence: each
    // may become durable without the other, and either alone leaves a prefix word the
    // level check exposes (readers skip it, writers repair it), so no fence between them.
    NodeBase* s = touch(survivor);
    const Leaf* lf = any_leaf(survivor);
    pm::store(&s->prefix.raw, prefix_from(leaf_key(lf), depth, s->level));
    pm::flush(&s->prefix, sizeof(PrefixWord));
    pm::commit_nt_sharing_fence(slot.word, slot.encode(survivor));
  } else {
    pm::commit_nt(slot.word, slot.encode(survivor));
  }
  l.obsolete(&n->lock);
  epochs_.retire(pool_.offset_of(n));
  return Status::ok;
}

}  // namespace wort::roart
