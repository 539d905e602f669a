// art_engine/art_tree_check.h — ArtEngine recovery walk, verify(), stats(), dump() and the
// allocator's block visitor.
#pragma once

#include <cstring>
#include <string>

#include "index/art_engine/art_tree.h"
#include "index/kit/checked_walk.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::art_engine {

//! Recovery: walks the tree with the depth each node must have. A node whose header
//! disagrees is the child of an interrupted split or merge: WOART rewrites its header
//! (one persisted 8-byte store, idempotent if recovery itself is interrupted); ART+CoW
//! never writes a header in place, so for it a disagreement is corruption.
template <ArtFlavor F>
Result<void> ArtEngine<F>::repair(Ref r, unsigned expected_depth) {
  if (is_leaf(r)) return {};
  NodeBase* n = node(r);
  if (header_is_stale(n->hdr, expected_depth)) {
    NodeHeader fixed;
    const Leaf* w = min_leaf(r);
    if (!F::kDepthRepair || w == nullptr ||
        !repaired_header(n->hdr, expected_depth, leaf_key(w), &fixed))
      return Error{Status::corrupt, "node at depth " + std::to_string(expected_depth) +
                                        " has an unrepairable header (depth " +
                                        std::to_string(n->hdr.depth) + ")"};
    pm::store_persist(&n->hdr, fixed);
  }
  const unsigned pos = n->hdr.branch_pos();
  Result<void> res;
  for_each_child(n, 0, [&](std::uint8_t, Ref c) {
    res = repair(c, pos + 1);
    return res.ok();
  });
  return res;
}

//! What verify() carries down the walk.
template <ArtFlavor F>
struct ArtEngine<F>::VerifyState {
  std::uint64_t keys = 0;
  std::string last;  //!< previous key in order
};

template <ArtFlavor F>
Result<void> ArtEngine<F>::verify() const {
  const Ref root = anchor_->root;
  if (root == kNull) return {};
  // Bounds, block starts, types and cycles first: check_ref below then follows only
  // words the walk has checked.
  if (auto r = walk_checked([](Ref, std::uint32_t) {}); !r) return r;
  VerifyState st;
  return check_ref(root, 0, st);
}

template <ArtFlavor F>
Result<void> ArtEngine<F>::check_ref(Ref r, unsigned depth, VerifyState& st) const {
  if (!is_leaf(r)) return check_node(node(r), depth, st);
  const Key k = leaf_key(leaf(r));
  if (st.keys > 0 && compare_keys(as_key(st.last), k) >= 0)
    return Error{Status::corrupt, "keys out of order at \"" + std::string(as_string(k)) + "\""};
  st.last.assign(as_string(k));
  ++st.keys;
  return {};
}

template <ArtFlavor F>
Result<void> ArtEngine<F>::check_node(const NodeBase* n, unsigned depth, VerifyState& st) const {
  const auto fail = [&](const std::string& what) {
    return Error{Status::corrupt, std::string(node_name(n->type)) + " at depth " +
                                      std::to_string(depth) + ": " + what};
  };
  if (n->hdr.depth != depth) return fail("stored depth " + std::to_string(n->hdr.depth));
  std::string why;
  if (!with_ops(n->type, [&](auto ops) { return decltype(ops)::check(n, &why); })) return fail(why);
  const unsigned children = child_count(n);
  if (children + (n->eok != kNull) < 2) return fail("fewer than two entries");
  const unsigned pos = n->hdr.branch_pos();
  const Key w = leaf_key(min_leaf(node_ref(pool_.offset_of(n))));
  if (w.size() < pos) return fail("a leaf shorter than the compressed path");
  for (unsigned i = 0; i < n->hdr.prefix_len && i < kHeaderPrefix; ++i)
    if (n->hdr.prefix[i] != key_byte(w, depth + i)) return fail("header prefix differs from leaves");
  if (n->eok != kNull) {

    const Key e = leaf_key(leaf(n->eok));
    if (e.size() != pos || std::memcmp(e.data(), w.data(), pos) != 0)
      return fail("end-of-key leaf does not end at the branch position");
    if (auto r = check_ref(n->eok, pos, st); !r) return r;
  }
  Result<void> res;
  for_each_child(n, 0, [&](std::uint8_t b, Ref c) {
    const Key m = leaf_key(min_leaf(c));
    if (m.size() <= pos || std::memcmp(m.data(), w.data(), pos) != 0 || key_byte(m, pos) != b) {
      res = fail("child " + std::to_string(b) + " holds a key of another path");
      return false;
    }
    res = check_ref(c, pos + 1, st);
    return res.ok();
  });
  return res;
}

//! Every reference below the root, each checked before anything in its block is read
//! (kit::CheckedWalk): a leaf is a block with room for its key, a node a block of a known
//! type with room for that type, internally consistent (the type's check()), whose
//! end-of-key slot holds a leaf. visit(ref, level) sees each, parents first; level counts
//! the inner nodes above. After a successful walk every pointer a reader can follow is
//! known good: open() runs it before anything else reads the tree.
template <ArtFlavor F>
template <class Visit>
Result<void> ArtEngine<F>::walk_checked(Visit&& visit) const {
  kit::CheckedWalk w(pool_, F::kKind, static_cast<std::uint32_t>(kMaxArtKey) + 1);
  return w.run(anchor_->root, [&](std::uint64_t r, std::uint32_t level) {
    const std::uint64_t off = ref_offset(r);
    if (is_leaf(r)) {
      if (!w.enter(off, sizeof(Leaf), 16, "leaf")) return;
      const std::uint32_t len = leaf(r)->key_len;
      if (len > kMaxArtKey) {
        w.fail("leaf at " + kit::CheckedWalk::hex(off) + " has a " + std::to_string(len) +
               "-byte key, longer than any key");
        return;
      }
      if (!w.fits(off, off, leaf_bytes(len), "leaf key")) return;
      visit(r, level);
      return;
    }
    if (!w.enter(off, sizeof(NodeBase), 16, "node")) return;
    const NodeBase* n = node(r);
    if (!known_type(n->type)) {
      w.fail("node at " + kit::CheckedWalk::hex(off) + " has unknown type " +
             std::to_string(static_cast<unsigned>(n->type)));
      return;
    }
    if (!w.fits(off, off, node_bytes(n->type), node_name(n->type))) return;
    std::uint64_t mark = 0;  // the obsolete mark (node_lock.h): its word holds the type byte
    std::memcpy(&mark, &n->type, sizeof mark);
    if (!w.tagged_word(mark, kLockGenShift, kLockObsolete, off, "obsolete mark")) return;
    std::string why;
    if (!with_ops(n->type, [&](auto ops) { return decltype(ops)::check(n, &why); })) {
      w.fail(std::string(node_name(n->type)) + " at " + kit::CheckedWalk::hex(off) + ": " + why);
      return;
    }
    if (n->eok != kNull && !is_leaf(n->eok)) {
      w.fail("end-of-key slot of the node at " + kit::CheckedWalk::hex(off) + " is not a leaf");
      return;
    }
    // Pushed last-first so that the walk pops them in key order (eok first).
    Entries e;
    collect(n, e);
    // A node has two entries or more in every state a crash can leave (a remove merges a
    // node away at one entry left, by one commit in its parent); readers take a leaf below
    // any node (min_leaf, witness_leaf), and a remove from a node of one entry would merge
    // a node with nothing.
    if (e.n + (n->eok != kNull) < 2) {
      w.fail("node at " + kit::CheckedWalk::hex(off) + " holds fewer than two entries");
      return;
    }
    visit(r, level);
    for (unsigned i = e.n; i-- > 0;) w.push(e.refs[i], level + 1);
    if (n->eok != kNull) w.push(n->eok, level + 1);
  });
}

template <ArtFlavor F>
Result<void> ArtEngine<F>::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  const kit::BlockCheck check(pool_);
  for (unsigned i = 0; i < 4; ++i) {
    const std::uint64_t spare = anchor_->spare[i];
    if (spare == 0) continue;
    if (!check.holds(spare, node_bytes(spare_type(i)), 16))
      return Error{Status::corrupt, std::string(F::kKind) + ": anchor spare " +
                                        kit::CheckedWalk::hex(spare) + " is not a block"};
    v(spare);
  }
  if (auto r = walk_checked([&](Ref r, std::uint32_t) { v(ref_offset(r)); }); !r) return r;
  epochs_.for_each_retired(v);  // unlinked, not yet freed: still the tree's (epoch.h)
  return {};
}

//! Leaf depth = inner nodes on the path from the root (a leaf at the root: 0). On a damaged
//! tree the figures cover what the checked walk reached before the first bad word.
template <ArtFlavor F>
IndexStats ArtEngine<F>::stats() const {
  IndexStats s;
  s.pm_bytes = pool_.allocator().block_size(pool_.offset_of(anchor_));
  for (std::uint64_t spare : anchor_->spare)  // remove's reserve: pool bytes, not nodes
    if (spare != 0) s.pm_bytes += pool_.allocator().block_size(spare);
  (void)walk_checked([&](Ref r, std::uint32_t level) {
    s.pm_bytes += pool_.allocator().block_size(ref_offset(r));
    if (!is_leaf(r)) {
      ++s.nodes[node_name(node(r)->type)];
      return;
    }
    ++s.keys;
    s.avg_leaf_depth += level;
    if (level > s.max_leaf_depth) s.max_leaf_depth = level;
  });
  if (s.keys > 0) s.avg_leaf_depth /= static_cast<double>(s.keys);
  s.dram_bytes = sizeof(LockTable);  // the writers' lock stripes (node_lock.h), per tree
  return s;
}

namespace detail {
inline std::string printable(Key k) {
  std::string out;
  for (std::byte c : k) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      out.push_back(static_cast<char>(u));
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 15]);
    }
  }
  return out;
}
}  // namespace detail

template <ArtFlavor F>
void ArtEngine<F>::dump_ref(std::ostream& os, Ref r, unsigned indent, int byte) const {
  os << std::string(indent * 2, ' ');
  if (byte >= 0) os << "[" << byte << "] ";
  else if (byte == -2) os << "[eok] ";
  if (is_leaf(r)) {
    const Leaf* l = leaf(r);
    os << "leaf \"" << detail::printable(leaf_key(l)) << "\" = " << l->value << "\n";
    return;
  }
  const NodeBase* n = node(r);
  os << node_name(n->type) << " depth=" << n->hdr.depth << " prefix_len=" << n->hdr.prefix_len
     << " children=" << child_count(n) << "\n";
  if (n->eok != kNull) dump_ref(os, n->eok, indent + 1, -2);
  for_each_child(n, 0, [&](std::uint8_t b, Ref c) {
    dump_ref(os, c, indent + 1, b);
    return true;
  });
}

template <ArtFlavor F>
void ArtEngine<F>::dump(std::ostream& os) const {
  os << F::kKind << " tree\n";
  if (anchor_->root == kNull) {
    os << "  (empty)\n";
  } else if (auto r = walk_checked([](Ref, std::uint32_t) {}); !r) {
    os << "  (not drawn: " << r.error().message << ")\n";
  } else {
    dump_ref(os, anchor_->root, 1, -1);
  }
}

}  // namespace wort::art_engine
