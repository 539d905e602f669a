// wB+Tree remove. A leaf keeps at least one entry: removing a leaf's last key unlinks the
// highest node whose subtree holds only that key (one commit: its parent's bitmap, or the
// anchor's root word), then frees the unlinked chain. Nodes are never merged or borrowed
// from (as in the FPTree paper's trees, which free only empty leaves).
#include "index/wbtree/wbtree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace wbtree;

Status WbTree::remove(Key k) {
  if (k.size() > kMaxKeyLength || anchor_->root == 0) return Status::not_found;
  collapse_root();
  const Probe p(k);
  Path path;
  descend(p, path);
  Node* leaf = node(path.node[path.depth - 1]);
  const View v = sorted_view(base(), leaf);
  const unsigned j = lower_bound(base(), leaf, v, p);
  if (j == v.n || compare(base(), leaf->entries()[v.pos[j]], p) != 0) return Status::not_found;
  if (v.n > 1) {
    const Entry gone = leaf->entries()[v.pos[j]];
    remove_entry(leaf, v, j, Finish::commit);  // the commit: the leaf's bitmap
    free_entry_key(gone);
    return Status::ok;
  }
  unsigned top = path.depth - 1;
  while (top > 0 && count_of(node(path.node[top - 1])) == 1) --top;
  unlink_chain(path, top);
  return Status::ok;
}

// Unlinks path.node[top] (whose subtree holds one key) with one commit, then frees it and
// everything below it on the path, with the key blocks their entries own.
void WbTree::unlink_chain(const Path& path, unsigned top) {
  // path.node[top]'s subtree holds one key: every node from it down has one entry.
  WORT_DCHECK(top < path.depth && count_of(node(path.node[top])) == 1);
  WORT_DCHECK(top == 0 || count_of(node(path.node[top - 1])) >= 2);
  if (top == 0) {
    pm::commit(&anchor_->root, std::uint64_t{0});  // the commit: the tree is empty
  } else {
    Node* parent = node(path.node[top - 1]);
    const View pv = sorted_view(base(), parent);
    unsigned at = 0;
    while (at < pv.n && parent->entries()[pv.pos[at]].value != path.node[top]) ++at;
    WORT_DCHECK(at < pv.n);  // the parent names the unlinked node
    const Entry gone = parent->entries()[pv.pos[at]];
    remove_entry(parent, pv, at, Finish::commit);  // the commit: the parent's bitmap
    free_entry_key(gone);
  }
  for (unsigned i = top; i < path.depth; ++i) {
    const Node* n = node(path.node[i]);
    for (std::uint64_t b = n->bitmap & ~kSlotsValid; b; b &= b - 1)
      free_entry_key(n->entries()[__builtin_ctzll(b)]);
    pool_.allocator().free(path.node[i]);
  }
}

}  // namespace wort
