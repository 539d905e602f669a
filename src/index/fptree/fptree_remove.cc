// FPTree remove (paper Alg. 5, single-threaded; App. C Alg. 15 for key blocks).
//
//   the leaf keeps other keys:  clear the key's bit              commit: the leaf's bitmap
//   it is the leaf's last key:  unlink the leaf from the list    commit: the previous leaf's
//                               (Alg. 6), no bitmap store        next, or the anchor's head
//
// The paper unlinks under a delete micro-log {cur, prev} (Alg. 6/7) so that its allocator,
// which records ownership persistently, can finish the deallocation after a crash. Ours
// recovers by tracing: the unlink is one 8-byte store, and a leaf (or key block) that is
// unreachable after a crash is free after the next open's trace. Nothing is left to redo,
// so this tree has no delete log (README.md, "Micro-logs"). Blocks are freed only after the
// commit is durable (the allocator's contract).
#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fptree_index;

Status FPTree::remove(Key k) {
  if (inner_.empty() || k.size() > kMaxKeyLength) return Status::not_found;
  const LeafRef l = leaf(inner_.find(k, &path_));
  const int s = l.find(k, fp_of(k));
  if (s == kNoSlot) return Status::not_found;
  const bool inl = l.is_inline(s);
  const std::uint64_t word = l.slot(s)->key;
  if (l.count() == 1) {
    if (Status st = remove_last_key(l, path_); st != Status::ok) return st;
  } else {
    pm::commit(l.bitmap_word(), l.bitmap() & ~(std::uint64_t{1} << s));  // the commit
  }
  drop_key_word(word, inl);
  return Status::ok;
}

Status FPTree::remove_last_key(LeafRef l, const Path& path) {
  WORT_DCHECK(l.count() == 1);
  WORT_DCHECK(!path.empty() && path.back().first->leaf_level &&
              path.back().first->leaves[path.back().second] == l.offset());
  const std::uint64_t prev = inner_.previous_leaf(path);
  std::uint64_t* link = prev != 0 ? leaf(prev).next_word() : &anchor_->head;
  WORT_DCHECK(*link == l.offset());  // the previous leaf (or the head) names l
  pm::commit(link, l.next());  // the commit: the leaf leaves the list
  inner_.erase(path);
  pool_.allocator().free(l.offset());
  return Status::ok;
}

}  // namespace wort
