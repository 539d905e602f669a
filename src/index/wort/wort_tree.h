// index/wort/wort_tree.h — WORT, the write-optimal radix tree (Lee et al., FAST'17, §3).
//
// A path-compressed radix tree over 4-bit partial keys whose every update commits with one
// failure-atomic 8-byte store: a child pointer (insert, split, remove, merge) or a leaf's
// value word (upsert). A split rewrites the split node's header (depth, prefix length,
// prefix) in one 8-byte store before the commit; if a crash falls between the two, the
// node's stored depth disagrees with the depth it is reached at, readers skip its prefix
// check (the full key is compared at the leaf) and the next writer that passes it repairs
// the header from a leaf below (RecoverHeader). See README.md in this folder.
//
// Concurrency (ROWEX): lookup, scan and range take no lock and never wait: they
// pin the tree's epoch and read every word a writer may change with one atomic load. A write
// (insert, upsert, update, remove) descends the same way, then locks only the node(s) whose
// words it stores (each node's lock word, kit::gen_lock: volatile, tagged with the pool's
// open generation; the anchor's root slot has one in DRAM), top-down, checks that what it
// saw still holds, and otherwise restarts from the root. No reader acts on a word before it
// is durable: upserts, updates and removes commit non-temporally (pm::commit_nt); the three
// inserts commit with cached stores (pm::publish), their new leaf born fresh (a reader that
// meets it writes back the slots above it and fences first) and their new node born locked
// (README, "No dirty reads"); blocks a remove unlinks are retired to an epoch reclaimer. The states a writer leaves between its
// stores are the crash states recovery knows, and readers cope with them the same way.
// verify(), stats(), dump() and visit_blocks() want a quiescent tree. See README.md,
// "Concurrency".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "index/kit/epoch.h"
#include "index/kit/gen_lock.h"
#include "index/wort/wort_node.h"
#include "pm/faults.h"
#include "wort/index.h"

namespace wort {

namespace wort_index {
#if WORT_FAULTS  // test builds only (pm/faults.h)
//! Tests only — the broken variant the concurrency and recovery tests must catch: scan and
//! range trust a node's stored prefix even when its depth disagrees with the depth it is
//! reached at (a split or merge rewriting it, or a crash between its stores).
extern std::atomic<bool> g_broken_reader_trusts_stale_prefix;
//! Tests only: called (with its context) by a writer between a node's header store and the
//! commit that makes the new header agree with the tree (SplitCmp, the merge with a node
//! survivor), from inside the write; it may read the tree (lookups, scans), not write it.
using WindowHook = void (*)(void* ctx);
extern std::atomic<WindowHook> g_header_window_hook;
extern void* g_header_window_ctx;
//! Tests only: called (with its context) by a writer after its lock-free descent decided
//! what to store and before it takes the locks for it (insert, upsert, update, remove); it
//! may read and write the tree (a nested write from the same thread: it holds no lock yet).
extern std::atomic<WindowHook> g_writer_locking_hook;
extern void* g_writer_locking_ctx;
//! Tests only — the broken variant the writer tests must catch: a writer that, having taken
//! its locks, does not check that what its descent saw still holds (the slot's word, the
//! node's header, the holder's children) and stores anyway.
extern std::atomic<bool> g_broken_writer_skips_validation;
//! Tests only — the broken variant the dirty-read oracle and wort_fresh_test must catch:
//! lock-free decisions ignore the fresh mark (readers return a leaf's value without making
//! its insert durable first; a writer's `exists` does not wait for the inserting writer).
extern std::atomic<bool> g_broken_reader_ignores_fresh;
//! Tests only — the broken variant the concurrent crash test must catch: an insert's new
//! node is born unlocked, so another writer can commit below it before its publishing
//! store is durable.
extern std::atomic<bool> g_broken_new_node_unlocked;
#endif
}  // namespace wort_index

class WortTree {
 public:
  static constexpr std::string_view kKind = "wort";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  //! Every entry point may be called from many threads at once (see the top of this file).
  static constexpr bool kConcurrent = true;

  //! A new, empty tree in a pool whose root is still 0.
  static Result<std::unique_ptr<WortTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds; after a crash, hands the allocator its trace (no other repair
  //! is needed at open: interrupted splits are repaired lazily, see README.md).
  static Result<std::unique_ptr<WortTree>> open(Pool& pool);

  Status insert(Key k, Value v) { return put(k, v, PutMode::insert); }
  Status upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
  Status update(Key k, Value v) { return put(k, v, PutMode::update); }
  //! Inline: the bench's direct loop and the adapter call the lookup for the key's length
  //! directly (the out-of-line dispatch cost more than the epoch pin each one now takes).
  std::optional<Value> lookup(Key k) const {
    if (wort_index::kSpanBits == 4 && k.size() == 8) [[likely]] {
      const Found f = lookup_8(k);
      return f.found ? std::optional<Value>(f.value) : std::nullopt;
    }
    return k.size() <= 8 ? lookup_short(k) : lookup_long(k);
  }
  //! What lookup() must return, the plain way: one loop down by branch positions, then the
  //! leaf compare (lookup_long, for a key of any length). The reference the unit tests
  //! compare the unrolled lookup_8 and lookup_short against.
  std::optional<Value> lookup_reference(Key k) const { return lookup_long(k); }
  Status remove(Key k) { return remove_key(k); }
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

  //! Node headers this handle has repaired (RecoverHeader) since it was opened.
  std::uint64_t headers_repaired() const noexcept {
    return headers_repaired_.load(std::memory_order_relaxed);
  }
  //! Writes that restarted from the root since the handle was opened (a lock found its node
  //! unlinked, or what the descent saw had changed; a header repair also restarts).
  std::uint64_t write_restarts() const noexcept {
    return restarts_.load(std::memory_order_relaxed);
  }
  //! Unlinked blocks waiting for readers to unpin (tests).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }
  //! Frees every block retired so far, once the readers pinned now have unpinned
  //! (Index::reclaim_retired). Not from inside an operation of this tree.
  void reclaim_retired() { epochs_.reclaim_everything(); }

 private:
  enum class PutMode { insert, upsert, update };
  class Locks;
  class OneLock;
  using Node = wort_index::Node;
  using HeaderFields = wort_index::HeaderFields;

  WortTree(Pool& pool, wort_index::Anchor* anchor) noexcept;
  //! What lookup_8 returns: two words, returned in two registers (a std::optional<Value>
  //! returned from its body went through the stack: 4 instructions more per lookup).
  struct Found {
    std::uint64_t found;  //!< 1: the key is there, with `value`; 0: absent
    Value value;
  };
  //! lookup() of an 8-byte key (the paper's integer keys; wort_tree.cc says how it differs).
  Found lookup_8(Key k) const;
  //! lookup() of a key of fewer than 8 bytes (of at most 8 in a build with 8-bit spans).
  std::optional<Value> lookup_short(Key k) const;
  //! lookup() of a longer key; lookup_reference() of any key.
  std::optional<Value> lookup_long(Key k) const;
  //! The word a descent by branch positions only reaches for `k`: a leaf word, or 0 (an
  //! empty slot, or k ends inside a node's prefix). The caller is pinned.
  std::uint64_t leaf_by_branches(Key k) const;

  //! The lock word guarding the words of `owner` (nullptr: the anchor's root slot).
  std::uint64_t* lock_of(Node* owner) noexcept { return owner ? &owner->lock : &root_lock_; }
  //! The lock word an insert's new node is born with: held by this writer (kit::gen_lock's
  //! value), or 0, free, in a solo write (nobody can reach the node before the write ends)
  //! and in the broken variant g_broken_new_node_unlocked.
  std::uint64_t born_lock() const noexcept {
    if (kit::EpochReclaimer::SoloWrite::active()) return 0;
    if (WORT_FAULT(wort_index::g_broken_new_node_unlocked)) [[unlikely]]
      return 0;
    return gen_ << 2 | kit::kGenLocked;
  }
  //! The mark an insert's new leaf is born with: fresh_mark_, or 0 in a solo write
  //! (kit::EpochReclaimer::SoloWrite: no other thread can read it before the write ends,
  //! and the write ends after its commit's fence), so no store into the leaf's written-back
  //! line follows the commit.
  std::uint32_t insert_mark() const noexcept {
    return kit::EpochReclaimer::SoloWrite::active() ? 0 : fresh_mark_;
  }
  //! Clears the mark of the leaf this insert made, once its commit is durable (nothing to
  //! clear in a solo write: insert_mark).
  static void clear_own_fresh(wort_index::LeafHeader* l) noexcept {
    if (!kit::EpochReclaimer::SoloWrite::active()) wort_index::clear_fresh(l);
  }
  //! Releases a new node's lock after its insert's commit (nothing if it was born free).
  void release_born_lock(Node* n, std::uint64_t lock) noexcept {
    if (lock != 0) [[likely]] kit::gen_unlock(&n->lock, gen_);
  }
  //! A writer about to decide on `leaf` (in a slot of `owner`), which is fresh: waits until
  //! the insert that published it is durable (put_at_leaf's exists).
  [[gnu::cold, gnu::noinline]] void wait_durable(Node* owner, wort_index::LeafHeader* leaf);
  //! A reader met `l` with a mark. This session's (fresh): writes back the slot words above
  //! it and fences, so the insert that published it is durable (README, "No dirty reads");
  //! then, or at once for an earlier session's mark, clears the mark. Cold.
  [[gnu::cold, gnu::noinline]] void help_fresh(const wort_index::LeafHeader* l) const;
  //! lookup() again, pinned, when the leaf compare met a leaf of k's length with a mark:
  //! helps a fresh leaf of k before it returns its value. Cold.
  [[gnu::cold, gnu::noinline]] std::optional<Value> lookup_marked(Key k) const;

  // wort_insert.cc
  Status put(Key k, Value v, PutMode mode);
  //! One put's arguments, passed by reference to its out-of-line cases (so that none takes
  //! more arguments than registers).
  struct PutOp {
    Key k;
    Value v;
    PutMode mode;
  };
  //! One attempt of put(); kRestart: start again from the root. kSkipTails: a prefix
  //! longer than its header holds is checked past the header's part only once, at the end
  //! of the descent, against a leaf below the last node or the root (path_matches); a key that
  //! diverges there is put again by the attempt that checks every prefix in full.
  template <bool kSkipTails>
  Status put_once(const PutOp& op);
  //! put_once<false>, out of line (the rare case above).
  Status put_checking_tails(const PutOp& op);
  //! True if `k` agrees with a leaf below node n (the descent's last node, or the root) —
  //! the leaf word w in the slot the descent reached, or (w == 0) n's leftmost leaf — on
  //! every partial key before b, n's branch position: `k` belongs below n.
  bool path_matches(const Node* n, std::uint64_t w, Key k, std::uint32_t b) const;
  Status put_at_leaf(const PutOp& op, Node* owner, std::uint64_t* slot, std::uint64_t w,
                     std::uint32_t depth);
  Status put_splitting(const PutOp& op, Node* owner, std::uint64_t* slot, std::uint64_t w,
                       std::uint64_t hw);
  Status insert_into_empty_slot(std::uint64_t* slot, Key k, Value v);
  Status split_leaf(std::uint64_t* slot, std::uint64_t old_leaf, std::uint32_t depth, Key k,
                    Value v);
  Status split_prefix(std::uint64_t* slot, Node* n, const HeaderFields& h,
                      std::uint32_t matched, Key k, Value v);
  std::uint32_t match_full_prefix(const Node* n, const HeaderFields& h, Key k) const;
  //! Partial keys of n's whole prefix that `k` matches: the header's, inline, when it holds
  //! the whole prefix (the common case: no call in the descent), else match_full_prefix.
  std::uint32_t prefix_matched(const Node* n, const HeaderFields& h, Key k) const {
    return h.prefix_len <= wort_index::kPrefixSlots ? wort_index::match_stored_prefix(h, k)
                                                    : match_full_prefix(n, h, k);
  }

  // wort_remove.cc
  struct RemovePath;
  Status remove_key(Key k);
  Status remove_once(Key k);
  Status unlink_leaf(const RemovePath& path, std::uint64_t leaf);
  void merge_into_parent(const RemovePath& path, std::uint64_t survivor);

  // wort_recovery.cc
  //! A writer's descent reached `n` (word w, in `slot` of `owner`) at `depth` and its header
  //! disagrees: under owner's and n's locks, if that still holds, repair it. Returns
  //! kRestart: the writer starts again.
  Status repair_locked(Node* owner, const std::uint64_t* slot, std::uint64_t w, Node* n,
                     std::uint32_t depth);
  HeaderFields repair_header(Node* n, std::uint32_t depth);

  Pool& pool_;
  wort_index::Anchor* anchor_;
  wort_index::Blocks blocks_;
  const std::uint64_t gen_;  //!< the pool's open generation: the tag of every lock taken
  const std::uint32_t fresh_mark_;  //!< wort_index::fresh_mark(gen_): new leaves carry it
  std::uint64_t root_lock_ = 0;  //!< DRAM: the anchor's root slot's lock (kit::gen_lock)
  std::atomic<std::uint64_t> headers_repaired_{0};
  std::atomic<std::uint64_t> restarts_{0};
  mutable kit::EpochReclaimer epochs_{&kit::free_to_allocator, &pool_.allocator()};
};

}  // namespace wort
