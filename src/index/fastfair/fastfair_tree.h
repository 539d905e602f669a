// index/fastfair/fastfair_tree.h — FAST&FAIR (Hwang et al., FAST'18): a B+-tree entirely in
// PM whose updates need no log. FAST shifts records in place so that every 8-byte store
// leaves a node readers can use (a dead slot is skipped); FAIR splits a node by building
// the sibling, linking it, and cutting the moved half with one store, then inserts the
// sibling into the parent; until then readers reach it through the sibling pointer
// (B-link). Writers that meet a transient state a crash left (a dead slot, an uncut split,
// a sibling missing from its parent) repair it; open() repairs nothing and walks only the
// kit's checked walk. See README.md in this folder.
//
// Concurrency (README "Concurrency"): readers take no lock. A write that changes one leaf
// and nothing else (the common case) locks only that leaf (a kit::gen_lock word in the
// header's `spare`), after a lock-free descent that it validates once the leaf is locked;
// a write that splits, merges, borrows or repairs a crash state takes the structure lock
// and the locks of every leaf it reads or changes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include <atomic>

#include "index/kit/epoch.h"
#include "index/kit/gen_lock.h"
#include "index/kit/writer_lock.h"
#include "index/fastfair/fastfair_key.h"
#include "index/fastfair/fastfair_layout.h"
#include "index/fastfair/fastfair_node.h"
#include "wort/index.h"

namespace wort {

class FastFairTree {
 public:
  static constexpr std::string_view kKind = "fastfair";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  //! Lock-free readers (§5: switch counter, B-link); writers lock the leaf they change, a
  //! split, merge or borrow takes the structure lock too (README "Concurrency").
  //! verify/stats/dump/visit_blocks want a quiescent tree.
  static constexpr bool kConcurrent = true;

  //! A new tree (one empty leaf as the root). opts.words[0]: node size in bytes (0: 512;
  //! a multiple of 64 in [256, 4096]).
  static Result<std::unique_ptr<FastFairTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds: the checked walk and the allocator's trace, nothing else.
  static Result<std::unique_ptr<FastFairTree>> open(Pool& pool);

  Status insert(Key k, Value v);
  Status upsert(Key k, Value v);
  Status update(Key k, Value v);
  std::optional<Value> lookup(Key k) const;
  Status remove(Key k);
  //! Unlinked blocks waiting for readers to unpin (tests).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }
  //! Frees every block retired so far, once the readers pinned now have unpinned
  //! (Index::reclaim_retired). Not from inside an operation of this tree.
  void reclaim_retired() { epochs_.reclaim_everything(); }
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

  //! Transient states this handle has repaired since it was opened (tests; dead_slots is
  //! counted with an atomic add, leaf-path writers repair concurrently).
  struct Repairs {
    std::uint64_t dead_slots = 0;      // a dead slot shifted out (crashed insert / delete)
    std::uint64_t cuts = 0;            // an uncut split completed (crash before the cut)
    std::uint64_t parent_links = 0;    // a sibling inserted into its parent
    std::uint64_t unlinked = 0;        // an empty node a crashed merge left in a chain
  };
  //! Rebalancing done by this handle (tests).
  struct Rebalances {
    std::uint64_t merges = 0, borrows = 0, root_collapses = 0;
  };
  const Rebalances& rebalances() const noexcept { return rebalances_; }
  const Repairs& repairs() const noexcept { return repairs_; }
  unsigned slots() const noexcept { return slots_; }
  std::uint64_t node_size() const noexcept { return node_size_; }
  //! Level of the root (0: the root is a leaf).
  unsigned height() const noexcept;
  //! Tests and tools: the root node's offset and a node by offset (read-only).
  std::uint64_t root() const noexcept { return anchor_->root; }
  const fastfair::Node* node_at(std::uint64_t off) const noexcept { return node(off); }

 private:
  enum class PutMode { insert, upsert, update };
  using Node = fastfair::Node;
  using NodeRef = fastfair::NodeRef;
  using SearchKey = fastfair::SearchKey;

  struct Path {
    std::uint64_t at[fastfair::kMaxLevels + 1];  // at[level]: the node the descent used
    unsigned height;                              // the root's level
    bool moved_right;                             // descend(link = false) followed a sibling
  };
  // Blocks allocated before an insert changes anything (so out_of_space changes nothing).
  struct Reserve {
    std::vector<std::uint64_t> nodes;
    std::vector<std::uint64_t> seps;  // per split level: the separator word for the parent
    std::size_t next_node = 0;
  };
  enum class Descent { ok, restart, error };

  //! A block a durable commit unlinked: freed once no reader can hold it (every writer is
  //! pinned, so this only queues it; the write's reclaim() after its unpin frees it).
  void retire(std::uint64_t off) { epochs_.retire(off); }
  //! A node an SMO unlinked: retired, and marked obsolete when the SMO unlocks it (a leaf).
  void retire_node(std::uint64_t off);

  // --- the leaf path (fastfair_write.cc): one leaf lock, no structure change ---
  //! A leaf locked and validated for a search key: `at` its find() result, `root` whether
  //! it is the root (a remove from it never rebalances).
  struct Locked {
    std::uint64_t off;
    NodeRef::Scan sc;  // the leaf read once, locked
    bool root;
  };
  //! The structure sequence once no SMO is under way (even).
  std::uint64_t smo_quiet() const noexcept;
  //! The leaf for s by a lock-free descent (one atomic load per word, no retry: the caller
  //! validates); 0 if the descent met a sibling to follow (crash state or SMO under way).
  std::uint64_t writer_leaf(const SearchKey& s, bool* root) const;
  //! Descends, locks the leaf and validates (not obsolete, no SMO since the descent began,
  //! no crash state to repair on the way). False: the structure path must do this write.
  bool lock_leaf(const SearchKey& s, Locked* lk);
  void unlock_leaf(std::uint64_t off) noexcept { kit::gen_unlock(&node(off)->h.spare, gen_); }
  //! The write on the leaf path; false (nothing changed) when it needs the structure path.
  bool put_leaf(Key k, const SearchKey& s, Value v, PutMode mode, Status* out);
  bool remove_leaf(const SearchKey& s, Status* out);

  // --- the structure path: the structure lock, then leaf locks ---
  void begin_smo();
  void end_smo();
  //! SMO path: locks leaf `off` (if not held yet) before the SMO reads or changes it.
  void hold(std::uint64_t off);
  Status put_smo(Key k, Value v, PutMode mode);
  Status remove_smo(Key k);

  FastFairTree(Pool& pool, fastfair::Anchor* anchor) noexcept;

  Node* node(std::uint64_t off) const noexcept {
    return reinterpret_cast<Node*>(base_ + off);
  }
  NodeRef ref(std::uint64_t off) const noexcept { return NodeRef{node(off), slots_}; }
  std::uint64_t off_of(const void* p) const noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<const std::byte*>(p) - base_);
  }

  // fastfair_tree.cc: readers
  std::uint64_t leaf_for(const SearchKey& s) const;
  std::uint64_t sibling_to_follow(NodeRef nr, const SearchKey& s) const;

  // fastfair_write.cc: writers
  Status put(Key k, Value v, PutMode mode);
  Descent descend(const SearchKey& s, unsigned target, Path& path, Status& err,
                  bool link = true);
  bool compact(NodeRef nr);
  //! compact() for a writer that has just scanned the node (nothing to do without a dead slot).
  bool compact(NodeRef nr, const NodeRef::Scan& sc);
  int uncut_at(NodeRef nr) const;
  //! Whether the node holds an uncut split, its end known (reads the sibling's first key).
  bool uncut(NodeRef nr, unsigned end) const;
  bool repair_cut(NodeRef nr);
  Status link_in_parent(unsigned level, std::uint64_t sib);
  Status plan(const Path& path, unsigned level, Reserve& res);
  void release(Reserve& res);
  void insert_up(const Path& path, unsigned level, std::uint64_t key, std::uint64_t ptr,
                 const SearchKey* s, bool unfenced, Reserve& res);
  std::uint64_t split(NodeRef nr, std::uint64_t boff, std::uint64_t* sep);
  void split_root(NodeRef nr, Reserve& res, std::uint64_t sep_copy, std::uint64_t* a1,
                  std::uint64_t* b, std::uint64_t* sep);
  Status make_key_word(Key k, std::uint64_t* word);
  Status copy_key_word(std::uint64_t word, std::uint64_t* copy);
  //! A block for a later copy of key word `word` (0 for an inline word), allocated only.
  Status reserve_key_copy(std::uint64_t word, std::uint64_t* block);
  //! Writes the copy of `word` into the reserved block and writes it back (unfenced);
  //! returns the copy's word.
  std::uint64_t fill_key_copy(std::uint64_t word, std::uint64_t block);
  std::uint64_t fresh_node(std::uint64_t off, std::uint8_t level, std::uint64_t leftmost,
                           std::uint64_t sibling, const fastfair::Record* recs, unsigned n);

  // fastfair_rebalance.cc
  void rebalance(const Path& path, unsigned level);
  bool rebalance_pair(NodeRef p, std::uint64_t left, std::uint64_t right);
  void detach(NodeRef p, unsigned rj);
  void merge_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r);
  void borrow_pair(NodeRef p, unsigned rj, NodeRef l, NodeRef r, std::uint64_t fresh,
                   std::uint64_t sep_block);
  //! `unfenced`: a write-back before it (a fresh node) still needs the commit's leading fence.
  void append(NodeRef nr, const fastfair::Record* recs, unsigned n, bool unfenced);
  bool collapse_root();

  // fastfair_verify.cc
  //! The checked walk: every level's sibling chain from the root down, each node and key
  //! block entered once, every child word a node of the next level's chain. Fills `levels`
  //! (root level first) when given.
  Result<void> walk(BlockVisitorFn visit, std::vector<std::vector<std::uint64_t>>* levels) const;
  struct LevelWalk;  // walk()'s per-node steps (fastfair_verify.cc)
  struct Verifier;   // verify()'s per-level steps (fastfair_verify.cc)
  //! A node's live records below its sibling's first key (an uncut split's copies are not
  //! its own), in order; counts dead slots in *dead.
  std::vector<fastfair::Record> effective(NodeRef nr, unsigned* dead) const;
  //! verify(): every live record of nr, past the sibling's first key too, in order.
  bool in_order(NodeRef nr) const;

  Pool& pool_;
  fastfair::Anchor* anchor_;
  std::byte* base_;
  std::uint64_t node_size_;
  unsigned slots_;
  fastfair::KeyReader kr_;
  std::uint64_t gen_;  //!< pool generation: the tag of the leaves' lock words
  Repairs repairs_;
  Rebalances rebalances_;
  mutable kit::EpochReclaimer epochs_{&kit::free_to_allocator, &pool_.allocator()};
  //! The structure lock: one SMO (split, merge, borrow, repair, root change) at a time;
  //! the only writer of inner nodes and the anchor.
  kit::WriterMutex smo_;
  //! The leaves the running SMO holds (smo_ holder only); `dead`: unlinked by it.
  struct Held {
    std::uint64_t off;
    bool dead;
  };
  std::vector<Held> held_;
  //! Set (never cleared) once a leaf may hold a dead slot under an even switch counter: a
  //! checked walk met one (only a crash leaves one: an insert's shift cut short), or the
  //! skip_dead_repair fault may have kept one. Until then a leaf-path writer that finds its
  //! leaf's counter even reads the leaf without looking for a dead slot
  //! (NodeRef::scan_clean): every writer in this run leaves a leaf with a dead slot odd (a
  //! delete) or with none (an insert, a split, a merge or borrow on compacted leaves).
  //! README "Where a dead slot can be".
  mutable std::atomic<bool> even_dead_{false};
  //! Structure sequence: odd while an SMO runs, +2 per SMO. A leaf-path writer reads it
  //! before its descent and again once its leaf is locked and read (own cache line: every
  //! writer reads it, only SMOs write it).
  alignas(64) std::atomic<std::uint64_t> smo_seq_{0};
};

}  // namespace wort
