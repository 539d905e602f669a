// artcommon/art_tree_remove.h — ArtTree remove: in-place removal, shrink, merge.
//
// Shrink thresholds (hysteresis against grow): NODE16 → NODE4 at 3 children, NODE48 →
// NODE16 at 12, NODE256 → NODE48 at 37. A node left with one entry is merged away: its
// survivor takes its place, absorbing its compressed path and branch byte.
#pragma once

#include "index/artcommon/art_tree.h"

namespace wort::artcommon {

//! Runs remove_key with the spares reserved (a full pool can always remove: see
//! allocate_node).
template <ArtFlavor F>
Status ArtTree<F>::remove(Key k) {
  WriteLock w(*this);
  reserve_spares();
  removing_ = true;
  const Status s = remove_key(k);
  removing_ = false;
  return s;
}

template <ArtFlavor F>
Status ArtTree<F>::remove_key(Key k) {
  Ref* slot = &anchor_->root;
  const Ref root = *slot;
  if (root == kNull) return Status::not_found;
  if (is_leaf(root)) {
    if (!leaf_matches(leaf(root), k)) return Status::not_found;
    pm::commit_nt(slot, kNull);
    retire_ref(root);
    return Status::ok;
  }
  unsigned depth = 0;
  for (;;) {
    NodeBase* n = node(*slot);
    const unsigned pos = n->hdr.branch_pos();
    if (k.size() < pos) return Status::not_found;
    if (k.size() == pos) {
      if (n->eok == kNull || !leaf_matches(leaf(n->eok), k)) return Status::not_found;
      return remove_eok(slot, n, depth);
    }
    const std::uint8_t b = key_byte(k, pos);
    Ref* cs = child_slot(n, b);
    if (cs == nullptr) return Status::not_found;
    if (is_leaf(*cs)) {
      if (!leaf_matches(leaf(*cs), k)) return Status::not_found;
      return remove_child(slot, n, depth, b, *cs);
    }
    slot = cs;
    depth = pos + 1;
  }
}

template <ArtFlavor F>
NodeType ArtTree<F>::shrunk_type(NodeType t, unsigned remaining) {
  if (t == F::Node16::kType && remaining <= 3) return F::Node4::kType;
  if (t == NodeType::node48 && remaining <= 12) return F::Node16::kType;
  if (t == NodeType::node256 && remaining <= 37) return NodeType::node48;
  return t;
}

//! Removes the leaf `victim` under byte b of n (at slot, reached at depth).
template <ArtFlavor F>
Status ArtTree<F>::remove_child(Ref* slot, NodeBase* n, unsigned depth, std::uint8_t b,
                                Ref victim) {
  const unsigned children = child_count(n);
  if (children - 1 + (n->eok != kNull) == 1) {  // one entry left: merge n away
    Ref survivor = n->eok;
    if (survivor == kNull) {
      for_each_child(n, 0, [&](std::uint8_t c, Ref r) {
        if (c != b) survivor = r;
        return survivor == kNull;
      });
    }
    if (Status s = merge(slot, depth, survivor); s != Status::ok) return s;
    retire_ref(victim);
    return Status::ok;
  }
  Status s = with_ops(n->type, [&](auto ops) -> Status {
    using Ops = decltype(ops);
    const NodeType t = shrunk_type(Ops::kType, children - 1);
    if constexpr (Ops::kInPlace) {
      if (t == Ops::kType) {
        Ops::remove(n, b);
        return Status::ok;
      }
    }
    Entries e;
    collect(n, e);
    e.erase(b);
    return rebuild(slot, n, t, e);
  });
  if (s == Status::ok) retire_ref(victim);
  return s;
}

//! Removes n's end-of-key leaf (in place unless n is left with a single child).
template <ArtFlavor F>
Status ArtTree<F>::remove_eok(Ref* slot, NodeBase* n, unsigned depth) {
  const Ref victim = n->eok;
  if (child_count(n) == 1) {
    Ref survivor = kNull;
    for_each_child(n, 0, [&](std::uint8_t, Ref r) {
      survivor = r;
      return false;
    });
    if (Status s = merge(slot, depth, survivor); s != Status::ok) return s;
  } else {
    pm::commit_nt(&n->eok, kNull);
  }
  retire_ref(victim);
  return Status::ok;
}

//! Replaces the node at slot (reached at depth) by its only remaining entry `survivor`. An inner survivor
//! takes over n's depth and a path extended by n's path and branch byte:
//!   WOART:   its header is rewritten in place and the pointer swapped under one fence
//!            (recovery repairs a survivor reached at a depth its header disagrees with);
//!   ART+CoW: it is copied with the new header and the copy published.
template <ArtFlavor F>
Status ArtTree<F>::merge(Ref* slot, unsigned depth, Ref survivor) {
  const Ref old = *slot;
  if (is_leaf(survivor)) {
    pm::commit_nt(slot, survivor);
    retire_ref(old);
    return Status::ok;
  }
  NodeBase* s = node(survivor);
  const NodeHeader hdr =
      make_header(depth, s->hdr.branch_pos() - depth, leaf_key(min_leaf(survivor)));
  if constexpr (F::kDepthRepair) {
    // No new block to order first: either store alone leaves a survivor whose depth
    // disagrees with its place but whose branch position is unchanged, which recovery
    // repairs, so the header's write-back shares the pointer's fence.
    pm::store(&s->hdr, hdr);
    pm::flush(&s->hdr, sizeof(NodeHeader));
    pm::commit_nt_sharing_fence(slot, survivor);
  } else {
    Ref copy;
    if (Status st = copy_with_header(s, hdr, &copy); st != Status::ok) return st;
    pm::publish_nt(slot, copy);
    retire_ref(survivor);
  }
  retire_ref(old);
  return Status::ok;
}

}  // namespace wort::artcommon
