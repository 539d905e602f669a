// FPTree remove (paper Alg. 5; App. C Alg. 15 for key blocks).
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
#include <thread>

#include "index/kit/gen_lock.h"
#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fptree_index;

Status FPTree::remove(Key k) {
  if (k.size() > kMaxKeyLength) return Status::not_found;
  std::uint64_t dead[2] = {0, 0};  // a key block, an unlinked leaf
  Status st;
  {
    kit::EpochReclaimer::Pin pin(epochs_);
    st = remove_pinned(k, dead);
  }
  // Retired after the pin ends (single-threaded, nobody is pinned: freed at once); inner
  // nodes and separators an unlink retired while we were pinned are freed here too.
  for (std::uint64_t d : dead)
    if (d != 0) epochs_.retire(d);
  epochs_.reclaim();
  return st;
}

// Concurrent form of Alg. 5: the key's leaf locked (lock_leaf); the leaf's last key unlinks
// the leaf under the structure lock with the previous leaf locked too (try-lock: the lock
// order is leaf, then structure lock; a held previous leaf — e.g. its split waits for the
// structure lock — sends us back to the start). Readers of both leaves wait for the
// sections, which end after the commit is durable and the leaf is out of the inner nodes
// and marked obsolete.
Status FPTree::remove_pinned(Key k, std::uint64_t dead[2]) {
  const std::uint8_t fp = fp_of(k);
  for (;;) {
    std::uint64_t off = 0;
    if (!lock_leaf(k, &off)) return Status::not_found;
    const LeafRef l = leaf(off);
    const int s = l.find(k, fp);
    if (s == kNoSlot) {
      unlock_leaf(off);
      return Status::not_found;
    }
    const bool inl = l.is_inline(s);
    const std::uint64_t word = l.slot(s)->key;
    if (l.count() > 1) {
      leaf_begin(off);
      pm::commit(l.bitmap_word(), l.bitmap() & ~(std::uint64_t{1} << s));  // the commit
      leaf_end(off);
      unlock_leaf(off);
      if (!inl) dead[0] = word;
      return Status::ok;
    }
    smo_.lock();
    Path path;
    const std::uint64_t at = inner_.find(k, &path);
    (void)at;
    WORT_DCHECK(at == off);  // locked and validated: a split of it would need our lock
    const std::uint64_t prev = inner_.previous_leaf(path);
    if (prev != 0 && !kit::gen_try_lock(leaf(prev).lock_word(), gen_)) {
      smo_.unlock();
      unlock_leaf(off);
      std::this_thread::yield();
      continue;
    }
    std::uint64_t* link = prev != 0 ? leaf(prev).next_word() : &anchor_->head;
    // The previous leaf (or the head) names l: a split of it would still hold its lock.
    WORT_DCHECK(*link == off);
    leaf_begin(off);
    if (prev != 0) leaf_begin(prev);
    pm::commit(link, l.next());  // the commit: the leaf leaves the list
    inner_.erase(path);
    unlock_leaf(off, /*obsolete=*/true);  // before its section ends: scans see it unlinked
    leaf_end(off);
    if (prev != 0) {
      leaf_end(prev);
      unlock_leaf(prev);
    }
    smo_.unlock();
    if (!inl) dead[0] = word;
    dead[1] = groups_.enabled() ? off | kTagGroupLeaf : off;  // back to its group, or freed
    return Status::ok;
  }
}

}  // namespace wort
