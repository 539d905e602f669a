// roart/roart_remove.cc — remove: from a leaf array (its slot := 0), of an array's last
// leaf or a bare leaf (the node's entry := 0), of an eok leaf, with shrink (a smaller copy
// published in the parent's slot: N16→N4 at 3 children, N48→N16 at 12, N256→N48 at 37)
// and merge (a node left with one entry is replaced by it in the parent's slot; a node
// survivor first gets its longer prefix word, written back under the commit's fence —
// either store alone leaves a state the level check exposes and writers repair).
// Unlinked blocks are freed only after the commit is durable.
#include <bit>

#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
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

Status Roart::remove(Key k) {
  ChildSlot slot{&anchor_->root, false};
  const Ref root = slot.get();
  if (root == kNull) return Status::not_found;
  if (is_leaf(root)) {
    if (!leaf_matches(leaf(root), k)) return Status::not_found;
    pm::commit(slot.word, Ref{kNull});
    free_ref(root);
    return Status::ok;
  }
  if (is_array(root)) return remove_in_array(slot, nullptr, slot, 0, 0, k);
  unsigned depth = 0;
  for (;;) {
    NodeBase* n = touch(slot.get());
    if (n->level < depth) return Status::corrupt;
    if (!prefix_consistent(n, depth)) repair_prefix(n, depth);
    if (prefix_mismatch(n, depth, k) < n->prefix.len) return Status::not_found;
    const unsigned pos = n->level;
    if (k.size() < pos) return Status::not_found;
    if (k.size() == pos) {
      if (n->eok == kNull || !leaf_matches(leaf(n->eok), k)) return Status::not_found;
      return remove_eok(slot, n, depth);
    }
    const std::uint8_t b = key_byte(k, pos);
    const ChildSlot cs = find_child(n, b);
    if (cs.word == nullptr) return Status::not_found;
    const Ref c = cs.get();
    if (is_leaf(c)) {
      if (!leaf_matches(leaf(c), k)) return Status::not_found;
      return remove_child(slot, n, depth, b, cs);
    }
    if (is_array(c)) return remove_in_array(cs, n, slot, depth, b, k);
    slot = cs;
    depth = pos + 1;
  }
}

//! k in the array at `aslot` (under byte b of `parent`, or the root if parent is null):
//! the array's slot is the commit, unless it is the array's last leaf: then the array goes.
Status Roart::remove_in_array(ChildSlot aslot, NodeBase* parent, ChildSlot parent_slot,
                              unsigned parent_depth, std::uint8_t b, Key k) {
  const Ref ar = aslot.get();
  LeafArray* a = touch_array(ar);
  const int i = find_in_array(a, k, fingerprint(k));
  if (i < 0) return Status::not_found;
  const std::uint64_t l = slot_leaf(a->slot[i]);
  if (std::popcount(a->bitmap) > 1) {
    remove_from_array(a, static_cast<unsigned>(i), node_flags());
    pool_.allocator().free(l);
    return Status::ok;
  }
  if (parent == nullptr) {  // the root array
    pm::commit(aslot.word, Ref{kNull});
    pool_.allocator().free(l);
    free_ref(ar);
    return Status::ok;
  }
  return remove_child(parent_slot, parent, parent_depth, b, aslot);
}

//! Frees a child that held only the removed key: a leaf, or an array of one leaf.
static void free_victim(Pool& pool, Ref v) {
  if (is_array(v)) {
    for (LeafSlot s : pool.at<LeafArray>(ref_offset(v))->slot)
      if (s != 0) pool.allocator().free(slot_leaf(s));
  }
  pool.allocator().free(ref_offset(v));
}

//! Removes the child at cs (byte b of n, which `slot` holds, reached at depth).
Status Roart::remove_child(ChildSlot slot, NodeBase* n, unsigned depth, std::uint8_t b,
                           ChildSlot cs) {
  const Ref victim = cs.get();
  const unsigned children = n->count;
  if (children - 1 + (n->eok != kNull) == 1) {  // one entry left: merge n away
    Ref survivor = n->eok;
    if (survivor == kNull) {
      Children c;
      collect_children(n, c);
      survivor = c.byte[0] == b ? c.ref[1] : c.ref[0];
    }
    if (Status s = merge(slot, n, depth, survivor); s != Status::ok) return s;
    free_victim(pool_, victim);
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
    pm::publish(slot.word, slot.encode(smaller));
    free_ref(old);
  }
  free_victim(pool_, victim);
  return Status::ok;
}

//! Removes n's eok leaf (in place unless n is left with a single child: merge).
Status Roart::remove_eok(ChildSlot slot, NodeBase* n, unsigned depth) {
  const Ref victim = n->eok;
  if (n->count == 1) {
    Children c;
    collect_children(n, c);
    if (Status s = merge(slot, n, depth, c.ref[0]); s != Status::ok) return s;
  } else {
    pm::commit(&n->eok, Ref{kNull});
  }
  free_ref(victim);
  return Status::ok;
}

//! Replaces n (in `slot`, reached at depth) by its only remaining entry. A node survivor
//! keeps its level and takes the longer prefix word [depth, level) first.
Status Roart::merge(ChildSlot slot, NodeBase* n, unsigned depth, Ref survivor) {
  if (is_node(survivor)) {
    NodeBase* s = touch(survivor);
    const Leaf* l = any_leaf(survivor);
    pm::store(&s->prefix, prefix_from(leaf_key(l), depth, s->level));
    pm::flush(&s->prefix, sizeof(PrefixWord));
  }
  pm::commit(slot.word, slot.encode(survivor));
  pool_.allocator().free(pool_.offset_of(n));
  return Status::ok;
}

}  // namespace wort::roart
