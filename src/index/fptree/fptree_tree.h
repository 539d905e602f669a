// index/fptree/fptree_tree.h — the FPTree (Oukid et al., SIGMOD'16): a hybrid SCM-DRAM
// B+-tree. Leaves are persistent (a linked list in the pool, unsorted slots, a validity
// bitmap, one-byte fingerprints); inner nodes are DRAM, rebuilt from the leaves on open.
// Concurrent (README "Concurrency"): readers take no lock (optimistic, version-validated
// descent of the DRAM inner nodes, a validated read of the leaf); writers lock the leaves
// they change (the generation-tagged `lock` word); a split runs under a split micro-log of
// its own (the anchor holds an array of them), and one DRAM structure lock covers every
// inner-node change (a split's parent update, an unlink).
//
// Every operation commits with one 8-byte store: a leaf's bitmap (insert, update, remove),
// a leaf's next word or the anchor's head (removing a leaf's last key, the first insert).
// A split runs under one of the anchor's split micro-logs {cur, new} and is finished by
// open() if a crash interrupts it. See README.md for the commit table and what recovery repairs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "index/kit/epoch.h"
#include "index/kit/writer_lock.h"
#include "index/fptree/fptree_groups.h"
#include "index/fptree/fptree_inner.h"
#include "index/fptree/fptree_layout.h"
#include "index/fptree/fptree_leaf.h"
#include "pm/faults.h"
#include "wort/index.h"

namespace wort {

class FPTree {
 public:
  static constexpr std::string_view kKind = "fptree";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  //! Every entry point may be called from many threads at once (`wort bench --threads N`).
  static constexpr bool kConcurrent = true;

  //! IndexOptions words: [0] leaf capacity (2..64, default 56), [1] inner fanout (3..65536,
  //! default 4096), [2] fingerprint hash (0 mixed, 1 constant: tests only), [3] leaves per
  //! leaf group (0..1024, default 0: no groups, every leaf its own allocator block).
  static Result<std::unique_ptr<FPTree>> create(Pool& pool, const IndexOptions& opts);
  //! Checks every leaf and key block (the allocator's trace), finishes an interrupted split
  //! from the micro-log, then rebuilds the inner nodes from the leaf list.
  static Result<std::unique_ptr<FPTree>> open(Pool& pool);

  Status insert(Key k, Value v);
  Status upsert(Key k, Value v);
  Status update(Key k, Value v);
  std::optional<Value> lookup(Key k) const;
  Status remove(Key k);
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

  //! Leaf groups in the list, and leaves of theirs not in the tree (tests; 0 without groups).
  std::uint64_t leaf_groups() const { return groups_.enabled() ? groups_.group_count() : 0; }
  std::uint64_t free_group_leaves() const { return groups_.enabled() ? groups_.free_count() : 0; }
  //! Splits open() finished from the micro-log (tests).
  std::uint64_t splits_recovered() const noexcept { return splits_recovered_; }
  //! Milliseconds open() spent in each phase: checked walk + trace, log replay, rebuild.
  struct OpenTimes {
    double trace_ms = 0, replay_ms = 0, rebuild_ms = 0;
  };
  const OpenTimes& open_times() const noexcept { return open_times_; }
  //! Unlinked blocks and inner nodes waiting for readers to unpin (tests).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }
  //! Frees every block retired so far, once the readers pinned now have unpinned
  //! (Index::reclaim_retired). Not from inside an operation of this tree.
  void reclaim_retired() { epochs_.reclaim_everything(); }
#if WORT_FAULTS  // test builds only (pm/faults.h)
  //! Tests only: the broken variant whose readers do not validate what they read from a
  //! leaf against its writers (no wait for a writer inside the leaf, no re-check of the
  //! leaf's version). tests/index/fptree/fptree_concurrency_test.cc shows it failing.
  void test_skip_leaf_validation(bool skip) noexcept { skip_leaf_validation_ = skip; }
  //! Tests only: called inside every split after its copy is durable (step 2) and before
  //! the old leaf changes, with the leaf's lock and a split log held and nothing else (no
  //! structure lock): another split may run to its end meanwhile (a second log in use).
  void test_on_split_copied(std::function<void()> f) { split_pause_ = std::move(f); }
  //! Tests only: update() from inside split_pause_ on the splitting thread (no second epoch
  //! pin: the outer operation's covers it).
  Status test_update_from_split_pause(Key k, Value v) { return put_pinned(k, v, PutMode::update); }
  //! Tests only: the broken variant whose splits are serialised on one DRAM mutex from the
  //! log's claim to the parent update (as with one micro-log): the concurrency test's
  //! paused split then holds every other split up.
  void test_serialise_splits(bool on) noexcept { serialise_splits_ = on; }
#endif
  //! Split micro-logs the anchor holds (1 in a pool made before the log array).
  std::uint32_t split_logs() const noexcept { return anchor_->logs(); }

 private:
  enum class PutMode { insert, upsert, update };
  using LeafRef = fptree_index::LeafRef;
  using Path = fptree_index::InnerTree::Path;

  FPTree(Pool& pool, fptree_index::Anchor* anchor);

  LeafRef leaf(std::uint64_t off) const noexcept { return LeafRef(pool_.base(), off, geo_); }
  std::uint8_t fp_of(Key k) const noexcept;

  // --- concurrency (fptree_tree.cc; README "Concurrency")
  // Leaf versions, in DRAM: a table of words indexed by a hash of the leaf's offset (two
  // leaves may share one: a reader then retries for nothing, never misses a writer). Low
  // 16 bits: writers inside a leaf of that word; above: a count of finished sections.
  static constexpr unsigned kStripeBits = 13;
  static constexpr std::uint64_t kActiveMask = 0xffff, kSectionDone = 0x10000;
  std::atomic<std::uint64_t>& stripe(std::uint64_t leaf_off) const noexcept {
    return stripes_[((leaf_off >> 6) * 0x9E3779B97F4A7C15ull) >> (64 - kStripeBits)];
  }
  //! A writer (holding the leaf's lock) begins / ends changing what readers of the leaf see.
  void leaf_begin(std::uint64_t off) const noexcept;
  void leaf_end(std::uint64_t off) const noexcept;
  //! The leaf's version once no writer is inside it (spins; yields after a while).
  std::uint64_t leaf_version(std::uint64_t off) const noexcept {
    const std::uint64_t v = stripe(off).load(std::memory_order_acquire);
    if ((v & kActiveMask) == 0) [[likely]]
      return v;
    return leaf_version_wait(off);
  }
  [[gnu::noinline]] std::uint64_t leaf_version_wait(std::uint64_t off) const noexcept;
  //! True if no writer entered the leaf since leaf_version returned v.
  bool leaf_unchanged(std::uint64_t off, std::uint64_t v) const noexcept {
    fptree_index::seq_acquire_fence();
    return skip_leaf_validation_ || stripe(off).load(std::memory_order_relaxed) == v;
  }
  //! Readers: the leaf for k and its version, the routing validated after the version was
  //! read (lock coupling into the leaf). False if the tree is empty.
  bool reader_leaf(Key k, std::uint64_t* off, std::uint64_t* v) const;
  //! Writers: the leaf for k, locked, the routing validated after the lock was taken.
  //! False if the tree is empty.
  bool lock_leaf(Key k, std::uint64_t* off);
  void unlock_leaf(std::uint64_t off, bool obsolete = false) noexcept;
  //! Retired pool offsets with this bit set are group leaves (pool offsets are 16-aligned;
  //! bits 0-1 tag DRAM inner nodes and separators).
  static constexpr std::uint64_t kTagGroupLeaf = 4;
  static void free_retired(void* tree, std::uint64_t x);
  //! A leaf for a split or the first insert: from the leaf groups, or an allocator block.
  Status new_leaf(std::uint64_t* off);
  static void retire_inner(void* tree, std::uint64_t tagged);
  template <bool kBounded>
  std::size_t read_range(Key from, Key hi, std::size_t max, Visitor v) const;

  // fptree_insert.cc
  Status put(Key k, Value v, PutMode mode);
  Status put_pinned(Key k, Value v, PutMode mode);
  //! A put's leaf split: the new leaf, the separator, the split log.
  struct SplitPut {
    std::uint64_t right = 0;
    std::string sep;
    std::uint32_t log = 0;
#if WORT_FAULTS
    std::unique_lock<std::mutex> serial;  //!< test_serialise_splits only
#endif
  };
  // put_pinned's rare cases, out of line: inlined, they cost its common case instructions
  // (spills, and a layout that put the common path in the function's cold part).
  [[gnu::noinline]] std::optional<Status> put_if_empty(Key k, Value v);
  [[gnu::noinline]] Status split_for_put(LeafRef* l, Key k, SplitPut* sp);
  [[gnu::noinline]] void finish_split_put(std::uint64_t off, SplitPut* sp);
  Status put_first_leaf(Key k, Value v, std::uint64_t key_word, bool inline_key);
  Status make_key_word(Key k, std::uint64_t* word, bool* inline_key);
  void drop_key_word(std::uint64_t word, bool inline_key) noexcept;
  static bool write_slot(LeafRef l, int s, std::uint64_t key_word, bool inline_key, Value v,
                         std::uint8_t fp) noexcept;

  // fptree_split.cc
  Status split_leaf(LeafRef l, std::uint32_t log, std::uint64_t* right, std::string* sep);
  std::string split_copy(LeafRef cur, LeafRef nu, std::uint64_t lock_word) const;
  void split_link(LeafRef cur, LeafRef nu) const;
  void reset_log(std::uint32_t log) const noexcept;
  //! A split log no other writer holds (waits while all are taken); release_log frees it.
  std::uint32_t claim_log() noexcept;
  void release_log(std::uint32_t log) noexcept;
  Result<void> replay_split_logs();

  // fptree_remove.cc
  Status remove_pinned(Key k, std::uint64_t dead[2]);

  // fptree_recovery.cc
  Result<void> rebuild_inner(std::vector<std::uint64_t>* chain);
  std::string smallest_key(LeafRef l) const;
  //! Sorted valid slots of a leaf.
  std::vector<int> sorted_slots(LeafRef l) const;

  Pool& pool_;
  fptree_index::Anchor* anchor_;
  fptree_index::LeafGeometry geo_;
  fptree_index::HashKind hash_;
  fptree_index::LeafGroups groups_;
  fptree_index::InnerTree inner_;
  std::uint64_t splits_recovered_ = 0;
  OpenTimes open_times_;
  std::uint64_t gen_;  //!< pool generation: the tag of the leaves' lock words
#if WORT_FAULTS
  bool skip_leaf_validation_ = false;
  bool serialise_splits_ = false;
  std::mutex serial_;                     //!< test_serialise_splits' one lock
  std::function<void()> split_pause_;     //!< test_on_split_copied
#else
  static constexpr bool skip_leaf_validation_ = false;  // no faults in this build
#endif
  std::atomic<std::uint64_t> logs_busy_{0};  //!< bit i: split log i claimed (DRAM only)
  //! The structure lock (the role of the paper's TSX transaction): a split's parent update,
  //! an unlink, the first leaf. The split's micro-log steps run outside it.
  kit::WriterMutex smo_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> stripes_;
  mutable kit::EpochReclaimer epochs_{&free_retired, this};
};

}  // namespace wort
