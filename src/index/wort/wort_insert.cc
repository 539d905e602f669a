// WORT insert, upsert and update (paper §3.2 and Algorithm 1, SplitCmp).
//
// Every path writes its new blocks first (pm::copy into unpublished memory), writes them
// back, fences, and only then stores the one child word that publishes them (the commit).
// The three insert commits are cached stores (pm::publish: fence, store, write-back, fence;
// release-ordered for readers, release_to_readers): the new leaf is born fresh and a new
// node born locked, so a reader that meets the leaf before the commit is durable makes it
// durable first, and no writer commits below the new node before then (README, "No dirty
// reads"). The upsert/update commit stays non-temporal (kit::commit_value_nt). Writers
// lock only the nodes they store into (ROWEX, put_once; wort_lock.h).
#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "index/kit/anchor.h"
#include "index/wort/wort_lock.h"
#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

namespace wort_index {
#if WORT_FAULTS
std::atomic<WindowHook> g_header_window_hook{nullptr};
void* g_header_window_ctx = nullptr;
std::atomic<WindowHook> g_writer_locking_hook{nullptr};
void* g_writer_locking_ctx = nullptr;
std::atomic<bool> g_broken_writer_skips_validation{false};
std::atomic<bool> g_broken_new_node_unlocked{false};
#endif
}  // namespace wort_index

namespace {

bool same_key(const LeafHeader* l, Key k) noexcept {
  return l->key_len == k.size() && (k.empty() || std::memcmp(l + 1, k.data(), k.size()) == 0);
}

Node empty_node(std::uint64_t header) noexcept {
  Node n{};
  n.header = header;
  return n;
}

// Gives the insert commit that follows (pm::publish: a relaxed pm::store) release ordering
// towards lock-free readers, whose loads of child words are acquire (wort_node.h, load):
// a reader that reads the new word sees the leaf and node bytes written before it. A
// release fence before the relaxed store is exactly that in C++ and no instruction on x86
// (where pm::publish's leading sfence and TSO order the stores anyway); ThreadSanitizer
// models no fence, so there the same release is announced on the word itself.
[[gnu::always_inline]] inline void release_to_readers(std::uint64_t* slot) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(slot);
#else
  (void)slot;
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

}  // namespace

// §3.2: the new leaf is durable before the empty slot points at it. The caller holds the
// lock of the slot's owner and has seen the slot empty under it; it keeps it until the leaf
// is no longer fresh (the commit's fence has passed).
[[gnu::always_inline]] inline Status WortTree::insert_into_empty_slot(std::uint64_t* slot, Key k,
                                                                    Value v) {
  std::uint64_t leaf = 0;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &leaf); s != Status::ok) return s;
  LeafHeader* l = blocks_.leaf(leaf);
  flush_leaf(l);
  release_to_readers(slot);
  pm::publish(slot, leaf);
  clear_own_fresh(l);
  return Status::ok;
}

// The descent reads like a lookup (each word with one atomic load) and compares prefixes
// as an insert must (prefix_matched). Where it has decided what to store, it locks the
// node(s) owning the words it stores, top-down — the slot's owner (`owner`, nullptr: the
// anchor), and for SplitCmp also the split node — and checks that the slot still holds the
// word it saw and that the split node's header is the one it decided on; otherwise it
// restarts. The lock also fails (restart) if the owner was merged away (obsolete). Under
// the owner's lock nobody else stores its slots; a node's branch position and its path (the
// partial keys before it) never change while it is linked, so a decision taken on the node
// holds once the slot is re-checked.
//
// Inlined into put(), and lean: the descent keeps only what the common case (an empty slot)
// needs in registers; a leaf, a prefix split and a repair leave through calls that take
// their own locks (README, "Single-thread cost", says what each of these saved).
template <bool kSkipTails>
[[gnu::always_inline]] inline Status WortTree::put_once(const PutOp& op) {
  const Key k = op.k;
  Node* owner = nullptr;
  std::uint64_t* slot = &anchor_->root;
  std::uint32_t depth = 0;  // the depth a node in *slot must have
  bool skipped = false;     // kSkipTails: some node's prefix was longer than its header's part
  const Node* check_below = nullptr;  // and the node path_matches checks below (b: its branch)
  std::uint32_t check_b = 0;
  std::uint64_t w;
  for (;;) {
    w = load(slot);
    if (w == 0 || is_leaf(w)) break;
    Node* n = blocks_.node(w);
    const std::uint64_t hw = load(&n->header);
    const HeaderFields h = decode_header(hw);
    if (h.depth != depth) [[unlikely]]  // a crash's leftover, or a split or merge under way
      return repair_locked(owner, slot, w, n, depth);
    const std::uint32_t b = h.branch();
    if constexpr (kSkipTails) {
      if (match_stored_prefix(h, k) < h.stored() || b > Partial::count(k)) {
        // `k` leaves n's path — or, if a tail above was skipped, maybe already left the
        // tree's path there: then the attempt that checks every prefix finds where.
        if (skipped) [[unlikely]] return put_checking_tails(op);
        return put_splitting(op, owner, slot, w, hw);
      }
      if (h.prefix_len > kPrefixSlots) [[unlikely]] {
        skipped = true;
        check_below = depth == 0 ? n : nullptr;  // the root (path_matches says why)
        check_b = b;
      }
    } else {
      if (prefix_matched(n, h, k) < h.prefix_len) return put_splitting(op, owner, slot, w, hw);
    }
    owner = n;
    slot = slot_for(n, k, b);
    depth = b + 1;
  }
  if constexpr (kSkipTails) {
    if (skipped) [[unlikely]] {
      if (check_below == nullptr) {
        check_below = owner;
        check_b = depth - 1;
      }
      if (!path_matches(check_below, w, k, check_b)) return put_checking_tails(op);
    }
  }
  if (w != 0) return put_at_leaf(op, owner, slot, w, depth);
  if (op.mode == PutMode::update) return Status::not_found;
  before_locking();
  OneLock l(lock_of(owner), gen_);
  if (!l.held()) return kRestart;
  if (load(slot) != 0 && changed()) return kRestart;
  return insert_into_empty_slot(slot, k, op.v);
}

// The slot (of `owner`) held leaf w: the same key (exists, or the upsert/update commit) or
// another one (a leaf split, which gives the slot a node).
Status WortTree::put_at_leaf(const PutOp& op, Node* owner, std::uint64_t* slot,
                             std::uint64_t w, std::uint32_t depth) {
  LeafHeader* leaf = blocks_.leaf(w);
  const bool same = same_key(leaf, op.k);  // a published leaf's key never changes
  if (same ? op.mode == PutMode::insert : op.mode == PutMode::update) {
    // exists is a decision on the leaf: on a fresh one, only once its insert is durable.
    if (same && mark_of(leaf) != 0) [[unlikely]] wait_durable(owner, leaf);
    return same ? Status::exists : Status::not_found;
  }
  before_locking();
  OneLock l(lock_of(owner), gen_);
  if (!l.held()) return kRestart;
  if (load(slot) != w && changed()) return kRestart;
  if (!same) return split_leaf(slot, w, depth, op.k, op.v);
  // Upsert/update commit: the leaf's value word, one 8-byte non-temporal store (a pool whose
  // values name blocks: the value's block was written back before, fence first). Under the
  // lock of the slot's owner: a remove of the leaf cannot pass it.
  kit::commit_value_nt(pool_, &leaf->value, op.v);
  return Status::ok;
}

// `k` leaves node n (word w, in `slot` of `owner`, header word hw) inside its compressed
// path: SplitCmp under the locks of owner and n, if n is still in the slot with that header.
Status WortTree::put_splitting(const PutOp& op, Node* owner, std::uint64_t* slot,
                               std::uint64_t w, std::uint64_t hw) {
  if (op.mode == PutMode::update) return Status::not_found;
  Node* n = blocks_.node(w);
  const HeaderFields h = decode_header(hw);
  const std::uint32_t matched = prefix_matched(n, h, op.k);
  before_locking();
  Locks l(gen_);
  if (!l.lock(lock_of(owner)) || !l.lock(&n->lock)) return kRestart;
  if ((load(slot) != w || load(&n->header) != hw) && changed()) return kRestart;
  return split_prefix(slot, n, h, matched, op.k, op.v);
}

Status WortTree::put_checking_tails(const PutOp& op) { return put_once<false>(op); }

// `leaf` (in a slot of `owner`) has a mark. This session's: the insert that published it
// holds the lock of the leaf's owner (the slot's owner, or the new node it was born
// holding) until after its commit's fence; taking that lock waits for it (a lock that fails,
// owner merged away, means the same: the merge held it too). An earlier session's: durable.
void WortTree::wait_durable(Node* owner, LeafHeader* leaf) {
  if (WORT_FAULT(g_broken_reader_ignores_fresh)) [[unlikely]] return;
  if (mark_of(leaf) == fresh_mark_) {
    std::uint64_t* w = lock_of(owner);
    if (kit::gen_lock(w, gen_)) kit::gen_unlock(w, gen_);
  }
  clear_fresh(leaf);
}

namespace {

// True if a and b (both with at least b partial keys) agree on partial keys 0 .. n-1: for
// keys of 8 bytes or more and n partial keys within 8 bytes one word compare, else Partial::mismatch.
bool agree_before(Key a, Key b, std::uint32_t n) noexcept {
  if (n == 0) return true;
  if (n * kSpanBits <= 64 && a.size() >= 8 && b.size() >= 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a.data(), 8);
    std::memcpy(&y, b.data(), 8);
    return ((__builtin_bswap64(x) ^ __builtin_bswap64(y)) >> (64 - kSpanBits * n)) == 0;
  }
  return Partial::mismatch(a, b, 0) >= n;
}

}  // namespace

// Every key below node n shares n's path (the partial keys before its branch position b)
// for as long as n is linked. n is the last node of the descent (owner), or the root when
// the root is the only node on it whose prefix is longer than its header holds (the nodes
// below it had their whole prefixes compared from their headers). The leaf: w, the one in
// the slot the descent reached (below both), or n's leftmost leaf. The root's leftmost path
// is the same few lines for every insert (Dense keys: the root's 11 zero partial keys), so
// it stays in cache; owner's leftmost leaf is a different cold line for nearly every
// insert — but a deeper node's leftmost path is no warmer than owner's (Clustered keys:
// more instructions and D1 misses), hence the root only. The answer holds for the store:
// owner, locked for it (a lock that fails once owner is unlinked), lies below n, and a
// node's path never changes while it is linked. A leaf read from a node unlinked meanwhile
// was below it too (an unlinked node keeps its slots).
bool WortTree::path_matches(const Node* n, std::uint64_t w, Key k, std::uint32_t b) const {
  const std::uint64_t l = w != 0 ? w : blocks_.leftmost_leaf(blocks_.word_of(n));
  if (l == 0) return false;  // no leaf below (not a tree): the full check decides
  return agree_before(k, leaf_key(blocks_.leaf(l)), b);
}

// Pinned (a node or leaf another writer unlinks meanwhile is not freed under the descent;
// NestablePin: a lookup that a test hook runs inside the write has its own pin word, and a
// write from a scan's visitor keeps the scan's pin), one attempt after another until one
// does not have to restart; then what no pinned thread can hold any more is freed.
Status WortTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  Status s;
  {
    kit::EpochReclaimer::NestablePin pin(epochs_);
    // Alone in the process: no locks, no fresh marks, new nodes born free (wort_lock.h).
    kit::EpochReclaimer::SoloWrite solo(hooks_allow_solo());
    const PutOp op{k, v, mode};
    while ((s = put_once<true>(op)) == kRestart) restarts_.fetch_add(1, std::memory_order_relaxed);
  }
  epochs_.reclaim();
  return s;
}

// Partial keys of the node's whole prefix that `k` matches (from h.depth). The header holds
// the first kPrefixSlots; a longer prefix is read from a leaf below (hybrid compression),
// because an insert must find the exact split point.
std::uint32_t WortTree::match_full_prefix(const Node* n, const HeaderFields& h, Key k) const {
  const std::uint32_t stored = match_stored_prefix(h, k);
  if (stored < h.stored() || h.prefix_len <= kPrefixSlots) return stored;
  const Key below = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(pool_.offset_of(n))));
  const std::size_t m = Partial::mismatch(k, below, h.depth + stored);
  return static_cast<std::uint32_t>(std::min<std::size_t>(m - h.depth, h.prefix_len));
}

// The slot holds a leaf with another key: a new node at `depth` collapses the partial keys
// both share and branches where they differ; the slot's pointer to it is the commit.
//
//   slot -> [leaf A]      becomes      slot -> (node depth, prefix = common)
//                                                 |- [leaf A]   (A's partial key, or end)
//                                                 `- [leaf K]
// The caller holds the lock of the slot's owner and has seen `old_leaf` in it under it.
Status WortTree::split_leaf(std::uint64_t* slot, std::uint64_t old_leaf, std::uint32_t depth,
                            Key k, Value v) {
  const Key old_key = leaf_key(blocks_.leaf(old_leaf));
  const std::size_t from = std::min({std::size_t{depth}, Partial::count(k), Partial::count(old_key)});
  const auto b = static_cast<std::uint32_t>(Partial::mismatch(k, old_key, from));
  if (b < depth) return Status::corrupt;  // the leaf does not belong under this slot

  std::uint64_t leaf = 0, node = 0;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &leaf); s != Status::ok) return s;
  Node image = empty_node(make_header(depth, b - depth, k));
  *slot_for(&image, k, b) = leaf;
  *slot_for(&image, old_key, b) = old_leaf;
  // Born locked: no writer commits below the node before its publishing store is durable.
  const std::uint64_t lock = born_lock();
  if (Status s = make_node(pool_, image, lock, &node); s != Status::ok) {
    pool_.allocator().free(block_of(leaf));
    return s;
  }
  LeafHeader* l = blocks_.leaf(leaf);
  flush_leaf(l);
  release_to_readers(slot);
  pm::publish(slot, node);
  clear_own_fresh(l);
  release_born_lock(blocks_.node(node), lock);
  return Status::ok;
}

// SplitCmp (Algorithm 1): `k` leaves node n's compressed path after `matched` partial keys.
// A new parent takes the common part and holds n and the new leaf; n's header drops the
// partial keys the parent now covers (depth moves down by matched + 1, prefix_len shrinks by
// as much, so depth + prefix_len is unchanged). Order: new blocks and n's header durable,
// then the old parent's slot (the commit). A crash between leaves n with a depth that
// disagrees with the depth it is reached at, which RecoverHeader repairs.
//
//   slot -> (n: depth d, prefix p0..pL-1)   becomes   slot -> (parent: depth d, p0..pm-1)
//                                                              |- (n: depth d+m+1, ...)
//                                                              `- [leaf K]
//
// The caller holds the locks of the slot's owner and of n (whose header it rewrites), and
// has seen n in the slot and n's header unchanged under them.
Status WortTree::split_prefix(std::uint64_t* slot, Node* n, const HeaderFields& h,
                              std::uint32_t matched, Key k, Value v) {
  const Key below = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(pool_.offset_of(n))));
  const std::uint32_t b = h.depth + matched;  // the new parent's branch position
  std::uint64_t leaf = 0, parent = 0;
  if (Status s = make_leaf(pool_, k, v, insert_mark(), &leaf); s != Status::ok) return s;
  Node image = empty_node(make_header(h.depth, matched, k));
  *slot_for(&image, k, b) = leaf;
  image.child[Partial::at(below, b)] = pool_.offset_of(n);
  // Born locked, as split_leaf's node.
  const std::uint64_t lock = born_lock();
  if (Status s = make_node(pool_, image, lock, &parent); s != Status::ok) {
    pool_.allocator().free(block_of(leaf));
    return s;
  }
  const std::uint64_t shortened = make_header(b + 1, h.prefix_len - matched - 1, below);
  // From here until the commit, a reader that reaches n through the old parent's slot sees
  // a header whose depth disagrees with that place (the crash state RecoverHeader knows):
  // lookups use only the branch position, unchanged; scans compare against a key below.
  pm::store(&n->header, shortened);
  LeafHeader* l = blocks_.leaf(leaf);
  flush_leaf(l);
  pm::flush(&n->header, sizeof n->header);
  WORT_FAULT_HOOK(g_header_window_hook, g_header_window_ctx);
  release_to_readers(slot);
  pm::publish(slot, parent);
  clear_own_fresh(l);
  release_born_lock(blocks_.node(parent), lock);
  return Status::ok;
}

}  // namespace wort
