// WORT recovery of interrupted splits and merges: RecoverHeader (Algorithm 2).
//
// Who repairs: the next writer (insert, upsert, update, remove) that passes the node, as in
// the paper (lazily, on access). open() repairs nothing (the pool opens at once; the
// allocator's trace is the only work at open). Readers need no repair: a stale header still
// names the right branch position, and a reader that sees a depth disagreement skips the
// prefix check and relies on the full-key comparison at the leaf.
#include "index/wort/wort_lock.h"
#include "index/wort/wort_tree.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

// The node is reached at `depth` but its header says otherwise. Either a SplitCmp wrote the
// header and crashed before its commit (header depth > depth), or a merge committed the
// parent pointer but not the header, or wrote the header but not the pointer (header depth <
// or > depth). In every case the node's keys are the same, so its true header is: depth, and
// a prefix running from depth to the first position where two leaves in different slots
// differ. Writing it is one 8-byte store; repeating it after another crash is harmless.
// Concurrently, a writer's descent also meets a depth disagreement inside another write's
// window (a SplitCmp or merge between its header store and its commit). It tells the two
// apart under the locks of the slot's owner and of n, top-down: those windows are held under
// the same locks (SplitCmp: the owner and n; merge: holder, the owner of C's slot, and C), so
// once it has both, n still in the slot it was found in, a disagreement left is a crash's.
Status WortTree::repair_locked(Node* owner, const std::uint64_t* slot, std::uint64_t w,
                               Node* n, std::uint32_t depth) {
  Locks l(gen_);
  if (!l.lock(lock_of(owner))) return kRestart;
  if (load(slot) != w && changed()) return kRestart;
  if (!l.lock(&n->lock)) return kRestart;
  // (changed() is false only in the broken variant, which repairs without re-checking)
  if (decode_header(load(&n->header)).depth != depth || !changed()) repair_header(n, depth);
  return kRestart;
}

// The caller holds n's lock.
HeaderFields WortTree::repair_header(Node* n, std::uint32_t depth) {
  std::uint64_t first = 0, second = 0;
  for (unsigned i = 0; i < kOrderedSlots; ++i) {
    const std::uint64_t w = load(ordered_slot(n, i));
    if (w == 0) continue;
    (first == 0 ? first : second) = w;
    if (second != 0) break;
  }
  const HeaderFields stale = decode_header(load(&n->header));
  const Key a = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(first)));
  std::uint32_t branch = stale.branch();
  if (second != 0) {
    const Key b = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(second)));
    branch = static_cast<std::uint32_t>(Partial::mismatch(a, b, depth));
  }
  const std::uint64_t header = make_header(depth, branch - depth, a);
  pm::store(&n->header, header);
  pm::persist(&n->header, sizeof n->header);
  headers_repaired_.fetch_add(1, std::memory_order_relaxed);
  return decode_header(header);
}

}  // namespace wort
