// WORT remove. The paper leaves deletion out; ours keeps the invariant "every node has at
// least two children" so path compression (and RecoverHeader's two leaves) hold.
//
//   holder has > 2 children:  clear the leaf's slot               commit: that slot := 0
//   holder has 2, survivor a leaf:  holder's parent slot := leaf   commit: parent slot
//   holder has 2, survivor a node C:  C absorbs holder's prefix and the partial key between
//       them (C.header := depth of holder, prefix_len grown so depth + prefix_len is kept),
//       and holder's parent slot := C                               commit: parent slot
//
//   (P) -> (holder d, p0..pL-1) -> [x], (C d', q0..)    becomes    (P) -> (C d, p0..pL-1 c q0..)
//
// In the merge the header store and the parent-slot store may reach PM in either order:
// each half alone leaves C reached at a depth its header disagrees with, which readers
// tolerate and RecoverHeader repairs exactly as for an interrupted split (C's keys, hence
// its branch position, are the same either way). So both are written back under one fence.
// The removed leaf and holder are retired only after the commit is durable (freed once no
// pinned thread, reader or writer, can hold them: at the earliest when this remove has
// unpinned); if a crash comes first,
// they are unreachable and the allocator's trace at open frees them. Every commit is
// non-temporal (no reader sees it before it is durable). Locks (ROWEX, wort_lock.h): the
// holder; for a merge also holder's parent (first) and a node survivor C (last), top-down;
// holder is released obsolete.
#include "index/wort/wort_lock.h"
#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

struct WortTree::RemovePath {
  std::uint64_t* slot = nullptr;         //!< holds the leaf to remove
  Node* holder = nullptr;                //!< node owning `slot` (nullptr: the anchor)
  std::uint64_t* holder_slot = nullptr;  //!< holds `holder`
  Node* parent = nullptr;                //!< node owning `holder_slot` (nullptr: the anchor)
  std::uint32_t holder_depth = 0;        //!< depth `holder` is reached at
};

// Pinned, attempt after attempt (as put()).
Status WortTree::remove_key(Key k) {
  if (k.size() > kMaxKeyLength) return Status::not_found;
  Status s;
  {
    kit::EpochReclaimer::NestablePin pin(epochs_);
    kit::EpochReclaimer::SoloWrite solo(hooks_allow_solo());  // as put()
    while ((s = remove_once(k)) == kRestart) restarts_.fetch_add(1, std::memory_order_relaxed);
  }
  epochs_.reclaim();
  return s;
}

// The descent reads like a lookup; a key found absent is absent at the moment of that read
// (a merged-away node a slow descent still passes keeps the slots it had when it was
// unlinked, a state of the tree during this call). The unlink locks and re-checks.
Status WortTree::remove_once(Key k) {
  RemovePath path;
  path.slot = &anchor_->root;
  std::uint32_t depth = 0;
  for (;;) {
    const std::uint64_t w = load(path.slot);
    if (w == 0) break;
    if (is_leaf(w)) {
      if (compare_keys(leaf_key(blocks_.leaf(w)), k) != 0) break;
      return unlink_leaf(path, w);
    }
    Node* n = blocks_.node(w);
    const HeaderFields h = decode_header(load(&n->header));
    if (h.depth != depth) [[unlikely]] return repair_locked(path.holder, path.slot, w, n, depth);
    if (match_stored_prefix(h, k) < h.stored()) break;
    const std::uint32_t b = h.branch();
    if (Partial::count(k) < b) break;
    path.parent = path.holder;
    path.holder = n;
    path.holder_slot = path.slot;
    path.holder_depth = depth;
    path.slot = slot_for(n, k, b);
    depth = b + 1;
  }
  return Status::not_found;
}

// Locks: holder alone when it keeps >= 2 children (the anchor's lock for a lone root
// leaf); for a merge, holder's parent, holder and a node survivor C, top-down. Checked under
// them: the slot still holds the leaf, holder still in its parent's slot, the child count
// still what the descent's choice assumed. kRestart: start again.
Status WortTree::unlink_leaf(const RemovePath& path, std::uint64_t leaf) {
  const bool keeps_two = path.holder == nullptr || child_count(path.holder) > 2;
  before_locking();
  Locks l(gen_);
  if (keeps_two) {
    if (!l.lock(lock_of(path.holder))) return kRestart;
    if ((load(path.slot) != leaf ||
         (path.holder != nullptr && child_count(path.holder) <= 2)) && changed())
      return kRestart;
    pm::commit_nt(path.slot, std::uint64_t{0});
    epochs_.retire(block_of(leaf));
    return Status::ok;
  }
  if (!l.lock(lock_of(path.parent)) || !l.lock(&path.holder->lock)) return kRestart;
  if ((load(path.holder_slot) != blocks_.word_of(path.holder) || load(path.slot) != leaf ||
       child_count(path.holder) != 2) && changed()) {
    // holder, locked and not obsolete, is a node of the tree, which has two children or
    // more: fewer is damage the open's walk did not see (a pool that failed verify() and
    // was written), and starting again would find it again, forever.
    if (child_count(path.holder) < 2) return Status::corrupt;
    return kRestart;
  }
  std::uint64_t survivor = 0;
  for (unsigned i = 0; i < kOrderedSlots && survivor == 0; ++i) {
    const std::uint64_t* s = ordered_slot(path.holder, i);
    if (s != path.slot) survivor = load(s);  // under holder's lock: nobody else stores it
  }
  // C is linked below holder, whose lock we hold: nobody can unlink it, so this succeeds.
  if (survivor != 0 && !is_leaf(survivor) && !l.lock(&blocks_.node(survivor)->lock))
    return kRestart;
  merge_into_parent(path, survivor);
  // holder keeps its slots (a reader inside it still finds what it held), leaf its key; a
  // writer that reaches holder finds its lock obsolete and restarts.
  l.obsolete(&path.holder->lock);
  epochs_.retire(block_of(leaf));
  epochs_.retire(pool_.offset_of(path.holder));
  return Status::ok;
}

// Replaces holder by its only remaining child (see the file comment).
void WortTree::merge_into_parent(const RemovePath& path, std::uint64_t survivor) {
  if (survivor != 0 && !is_leaf(survivor)) {
    Node* c = blocks_.node(survivor);
    const std::uint32_t branch = decode_header(load(&c->header)).branch();
    const Key below = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(survivor)));
    pm::store(&c->header, make_header(path.holder_depth, branch - path.holder_depth, below));
    pm::flush(&c->header, sizeof c->header);
    // Either store alone leaves a header whose depth disagrees with its place and an
    // unchanged branch position, which RecoverHeader repairs and readers detect (a reader
    // in holder sees C's new header at C's old place): one fence for both.
    WORT_FAULT_HOOK(g_header_window_hook, g_header_window_ctx);
    pm::commit_nt_sharing_fence(path.holder_slot, survivor);
    return;
  }
  pm::commit_nt(path.holder_slot, survivor);
}

}  // namespace wort
