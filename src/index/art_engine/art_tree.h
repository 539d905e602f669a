// art_engine/art_tree.h — the adaptive radix tree engine shared by WOART and ART+CoW.
//
// A Flavor supplies its NODE4/NODE16 operations and how path compression changes:
//   struct Flavor {
//     static constexpr std::string_view kKind;      // registry name
//     static constexpr std::uint64_t kAnchorMagic;  // tells the flavors' pools apart
//     using Node4 = ...; using Node16 = ...;         // node ops (see art_engine/node48.h)
//     static constexpr bool kDepthRepair;           // true: split/merge rewrite the
//         // child's header in place (WOART, repaired from the depth after a crash);
//         // false: split/merge copy the child (ART+CoW)
//   };
// Node ops with kInPlace add/remove a child in place with their own commit store; the
// others (ART+CoW NODE4/NODE16) are copied, edited and published by a parent-pointer swap.
//
// Concurrency: lookups and scans take no lock and never block; a write (insert,
// upsert, update, remove) descends lock-free, then locks only the nodes it stores into
// (node_lock.h: DRAM lock stripes, a generation-tagged obsolete mark in the node), top-down,
// re-checks what it saw, and
// restarts from the root on a change (ROWEX). No reader acts on a value before it is
// durable (README "No dirty reads"): removes, merges and value updates commit
// non-temporally; the inserts' commits are cached, their new leaf is born fresh (a reader
// that meets it writes the publishing store back and fences first: help_fresh) and their new
// nodes born locked (their lock stripe taken before publication, released after the
// commit's fence: no other writer commits below them before then); blocks a write unlinks are retired to an
// epoch reclaimer (index/kit/epoch.h) that readers and writers pin. verify(), stats(), dump() and visit_blocks() want
// a quiescent tree. See README.md.
//
// Every structural change ends in one 8-byte store: a node's commit word (in-place add or
// remove), a leaf's value word (upsert), a node's end-of-key slot, or the parent's child
// pointer (new leaf under an empty slot, leaf split, prefix split, grow, shrink, merge,
// copy-on-write edit). Blocks that a change unlinks are freed only after that store is
// persisted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "index/art_engine/art_layout.h"
#include "index/art_engine/entries.h"
#include "index/art_engine/header.h"
#include "index/art_engine/leaf.h"
#include "index/art_engine/node256.h"
#include "index/art_engine/node48.h"
#include "index/art_engine/node_lock.h"
#include "index/art_engine/node_ops.h"
#include "index/art_engine/sync.h"
#include "index/kit/epoch.h"
#include "index/kit/writer_lock.h"  // kit::WriterMutex: remove's reserve
#include "pm/faults.h"
#include "wort/index.h"

namespace wort::art_engine {

#if WORT_FAULTS  // test builds only (pm/faults.h)
//! Tests only: called (with its context) by a writer after its lock-free descent decided
//! what to store and before it takes the locks for it (insert, upsert, update, remove); it
//! may read and write the tree (a nested write from this thread: it holds no lock yet).
using WriterHook = void (*)(void* ctx);
inline std::atomic<WriterHook> g_writer_locking_hook{nullptr};
inline void* g_writer_locking_ctx = nullptr;
//! Tests only — the broken variant the writer tests must catch: a writer that, having taken
//! its locks, does not check that what its descent saw still holds and stores anyway.
inline std::atomic<bool> g_broken_writer_skips_validation{false};
//! Tests only — the broken variant the dirty-read oracle and the fresh-leaf tests must catch:
//! readers return (and writers decide on) a fresh leaf without making its insert durable.
inline std::atomic<bool> g_broken_reader_ignores_fresh{false};
//! Tests only — the broken variant crash_born_locked_crash_test must catch: an insert's
//! new nodes are published without their lock stripes held, so another writer can commit
//! below one before its publishing store is durable.
inline std::atomic<bool> g_broken_new_node_unlocked{false};
#endif

namespace detail {
//! g_writer_locking_hook, between a write's lock-free decision and its locks.
inline void before_locking() noexcept {
  WORT_FAULT_HOOK(g_writer_locking_hook, g_writer_locking_ctx);
}
//! Under its locks a write found that what its descent saw has changed: true, restart —
//! false only in the broken variant, which stores anyway. Out of line: never on the common
//! path.
[[gnu::noinline, gnu::cold]] inline bool changed() noexcept {
  return !WORT_FAULT(g_broken_writer_skips_validation);
}
//! A remove is running on this thread: build_node may take a spare (allocate_node).
inline constinit thread_local bool t_removing = false;
//! Blocks this thread's write attempt unlinked, retired once it has released its locks and
//! its pin (ArtEngine::retire_pending): a single-threaded write frees them at once, as before.
struct Unlinked {
  std::uint64_t off[4];
  unsigned n = 0;
};
inline constinit thread_local Unlinked t_unlinked{};
}  // namespace detail

static_assert(InPlaceNodeOps<Node48Ops> && InPlaceNodeOps<Node256Ops>,
              "NODE48 and NODE256 add and remove in place in both flavors");

template <ArtFlavor Flavor>
class ArtEngine {
 public:
  static constexpr std::string_view kKind = Flavor::kKind;
  static constexpr std::size_t kMaxKeySize = kMaxArtKey;
  //! Every entry point may be called from many threads at once (see the top of this file).
  static constexpr bool kConcurrent = true;

  //! A new, empty tree in a fresh pool (writes the anchor, sets the pool root).
  static Result<std::unique_ptr<ArtEngine>> create(Pool& pool, const IndexOptions& opts);
  //! Opens the tree: checks the anchor, repairs interrupted splits/merges (WOART), then
  //! hands the reachable blocks to the allocator's trace.
  static Result<std::unique_ptr<ArtEngine>> open(Pool& pool);

  Status insert(Key k, Value v) { return put(k, v, /*overwrite=*/false); }
  Status upsert(Key k, Value v) { return put(k, v, /*overwrite=*/true); }
  Status update(Key k, Value v);
  //! Defined here and always inlined into its callers (the adapter, the bench's direct
  //! loop), as it was before the epoch pin made it larger than the inlining limit: the call
  //! would cost more than the pin. Its walk (lookup_leaf, below) is inlined too.
  //! A leaf of k's length with a fresh mark (rare: an insert between its cached commit and
  //! that commit's fence, or a mark an earlier session left) leaves the fast path for
  //! marked_leaf (out of line, cold, under the same pin).
  [[gnu::always_inline]] std::optional<Value> lookup(Key k) const {
    kit::EpochReclaimer::Pin pin(epochs_);
    bool marked = false;
    const Leaf* l = lookup_leaf(k, &marked);
    if (l == nullptr) [[unlikely]] {
      if (!marked) [[likely]] return std::nullopt;
      l = marked_leaf(k);
      if (l == nullptr) return std::nullopt;
    }
    return load(&l->value);
  }
  Status remove(Key k);
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;
  //! Unlinked blocks waiting for readers to unpin (tests).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }
  //! Frees every block retired so far, once the readers pinned now have unpinned
  //! (Index::reclaim_retired). Not from inside an operation of this tree.
  void reclaim_retired() { epochs_.reclaim_everything(); }
  //! Write attempts that started again from the root (a lock found its node obsolete, or
  //! what the descent saw had changed under the locks). Tests and diagnostics.
  std::uint64_t write_restarts() const noexcept {
    return restarts_.load(std::memory_order_relaxed);
  }

 private:
  struct ScanState;
  struct VerifyState;

  ArtEngine(Pool& pool, Anchor* anchor)
      : pool_(pool), anchor_(anchor), gen_(pool.generation()), fresh_mark_(fresh_mark(gen_)) {}

  // --- pointers and node-type dispatch
  NodeBase* node(Ref r) const { return pool_.at<NodeBase>(ref_offset(r)); }
  Leaf* leaf(Ref r) const { return pool_.at<Leaf>(ref_offset(r)); }
  static bool known_type(NodeType t);
  template <class Fn>
  static decltype(auto) with_ops(NodeType t, Fn&& fn);
  static std::size_t node_bytes(NodeType t);
  static const char* node_name(NodeType t);
  Ref find_child(const NodeBase* n, std::uint8_t b) const;
  Ref checked_leaf(const NodeBase* n, std::uint8_t b, Ref c) const;
  Ref* child_slot(NodeBase* n, std::uint8_t b) const;
  unsigned child_count(const NodeBase* n) const;
  bool for_each_child(const NodeBase* n, unsigned from, ChildFn fn) const;
  Ref any_child(const NodeBase* n, std::uint8_t* b) const;
  void collect(const NodeBase* n, Entries& e) const;

  // --- reads
  //! find_leaf as lookup() runs it (lock-free, pinned by the caller), written for the
  //! instructions it costs, as WORT's lookup is (src/index/wort/README.md, "Concurrency"):
  //! the pool base read once, not per level; a node's address is base + its reference (a
  //! node reference has no tag to clear) and a leaf's base + (reference - 1); NODE256 —
  //! the type most levels of a large tree have — tested first and its child read inline
  //! with a one-mov load (sync.h load_ref); the other types through their `find` (which
  //! re-check reused slots, node_ops.h); an 8-byte key compared with the leaf's as one word
  //! (no memcmp call). Every word a writer may change is read exactly as find_leaf reads it:
  //! root, branch position, eok and child pointers with one atomic (or load_ref) load; the
  //! type byte and a leaf's key, which never change once published, plainly.
  //! A leaf of k's length whose fresh mark is set: nullptr with *marked = true (the key's
  //! length and the mark are compared in one 8-byte compare, len_is_not_fresh).
  [[gnu::always_inline]] const Leaf* lookup_leaf(Key k, bool* marked) const {
    const std::byte* const base = pool_.base();
    Ref r = load(&anchor_->root);
    while (r != kNull && !is_leaf(r)) {
      const auto* n = reinterpret_cast<const NodeBase*>(base + r);
      const unsigned pos = load_branch_pos(n);
      if (k.size() <= pos) [[unlikely]] {
        if (k.size() < pos) return nullptr;  // the key ends inside the node's prefix
        r = load(&n->eok);
        continue;
      }
      const std::uint8_t b = key_byte(k, pos);
      const NodeType t = type_of(n);
      if (t == NodeType::node256) r = load_ref(&reinterpret_cast<const Node256*>(n)->child[b]);
      else if (t == Flavor::Node16::kType) r = Flavor::Node16::find(n, b);
      else if (t == Flavor::Node4::kType) r = Flavor::Node4::find(n, b);
      else if (t == NodeType::node48) r = Node48Ops::find(n, b);
      else unknown_node_type(t);
    }
    if (r == kNull) return nullptr;
    const auto* l = reinterpret_cast<const Leaf*>(base + (r - 1));  // r is a leaf: tag 1
    if (!len_is_not_fresh(l, k.size())) [[unlikely]] {  // another length, or marked
      *marked = l->key_len == k.size();
      return nullptr;
    }
    if (k.size() == 8) {  // the paper's integer keys: one 8-byte compare, not a memcmp call
      std::uint64_t x, y;
      std::memcpy(&x, l->key, 8);
      std::memcpy(&y, k.data(), 8);
      return x == y ? l : nullptr;
    }
    return k.empty() || std::memcmp(l->key, k.data(), k.size()) == 0 ? l : nullptr;
  }
  const Leaf* find_leaf(Key k) const;
  //! lookup_leaf again (the caller is pinned) when its leaf compare met a leaf of k's length
  //! with a mark: k's leaf (or nullptr), helped first if fresh (help_fresh). Cold; it returns
  //! the leaf, not the value, so that lookup()'s two paths meet on one pointer.
  [[gnu::cold, gnu::noinline]] const Leaf* marked_leaf(Key k) const;
  //! A reader met `l` with a mark. This session's (fresh): writes back the words that may
  //! hold the insert's not yet durable publishing store — l's commit word in the node
  //! holding it and the pointer word naming that node — and fences (README "No dirty
  //! reads"); then, or at once for an earlier session's mark, clears the mark. Cold.
  [[gnu::cold, gnu::noinline]] void help_fresh(const Leaf* l) const;
  //! The mark an insert's new leaf is born with: none in a solo write (kit::EpochReclaimer::
  //! SoloWrite: no other thread can read it before the write ends, and a thread that
  //! arrives waits for the write to end, its commit durable), else this session's.
  std::uint32_t insert_mark() const noexcept {
    return kit::EpochReclaimer::SoloWrite::active() ? 0 : fresh_mark_;
  }
  //! Clears the mark of the insert's own new leaf after its commit's fence (nothing to
  //! clear in a solo write: no store into the leaf's just written-back line).
  static void clear_own_fresh(const Leaf* l) noexcept {
    if (!kit::EpochReclaimer::SoloWrite::active()) clear_fresh(l);
  }
  //! A reader's check of a leaf it is about to return: helps it if it has a mark.
  void help_if_marked(const Leaf* l) const {
    if (mark_of(l) != 0) [[unlikely]] help_fresh(l);
  }
  //! A writer about to decide on `l` (in a slot of `owner`; nullptr: the root slot) without
  //! storing (insert's `exists`): if it is fresh, waits until the insert that published it
  //! is durable — that insert holds owner's stripe (its slot's owner, or the new node it was
  //! born holding) until after its commit's fence. Cold.
  [[gnu::cold, gnu::noinline]] void wait_durable(const NodeBase* owner, const Leaf* l);
  //! The smallest leaf under r, for a quiescent check (verify, open: nothing changes).
  const Leaf* min_leaf(Ref r) const;
  //! Some leaf under r (the first each node finds cheapest, not the smallest), for a
  //! lock-free reader or writer that needs a witness of r's compressed path: every leaf
  //! under r shares it.
  //! nullptr: a node below r names no entry, or was read again kWitnessRereads times in a
  //! row (damage; see art_tree_read.h).
  const Leaf* witness_leaf(Ref r) const;
  static constexpr unsigned kWitnessRereads = 1u << 16;
  bool scan_ref(Ref r, unsigned depth, bool bounded, ScanState& st) const;
  bool scan_node(const NodeBase* n, unsigned depth, bool bounded, ScanState& st) const;

  // --- writes (ROWEX: a lock-free descent, then the locks of the nodes stored into,
  // top-down, and a re-check of what the descent saw; README "Concurrency")
  //! The slot a write commits is named by its owner (nullptr: the anchor's root slot) and
  //! the byte it is under there (kEok: the owner's end-of-key slot).
  static constexpr int kEok = -1;
  Ref* slot_of(NodeBase* owner, int b) const {
    if (owner == nullptr) return &anchor_->root;
    if (b == kEok) return &owner->eok;
    if (type_of(owner) == NodeType::node256) return &reinterpret_cast<Node256*>(owner)->child[b];
    return child_slot(owner, static_cast<std::uint8_t>(b));
  }
  //! Under the owner's lock: its slot for b still exists and holds r.
  bool slot_holds(NodeBase* owner, int b, Ref r) const {
    const Ref* s = slot_of(owner, b);
    return s != nullptr && load(s) == r;
  }
  //! The locks of one write: the pool's open generation tags them.
  NodeLocks locks() noexcept { return NodeLocks(locks_, gen_); }
  //! An insert's new node, born locked: its stripe taken (by one try, the write holding
  //! others) before the node is published. False: the stripe is another writer's, the
  //! caller frees what it built and restarts. Does nothing in the broken variant.
  bool born_locked(NodeLocks& lk, Ref n) noexcept {
    if (WORT_FAULT(g_broken_new_node_unlocked)) [[unlikely]] return true;
    return lk.lock(node(n));
  }
  //! Runs one write attempt `fn` (pinned) until it does not ask to restart; retires what it
  //! unlinked once its locks and pin are released.
  template <class Fn>
  [[gnu::always_inline]] inline Status run_write(Fn&& fn);
  void retire_pending();
  //! Where a write's lock-free descent stopped: the arguments of the case that follows.
  struct At {
    NodeBase* owner;  //!< holds the slot r was read from (nullptr: the anchor's root)
    int ob;           //!< r's byte in owner (kEok: owner's end-of-key slot)
    Ref r;            //!< the slot's word as the descent read it
    unsigned depth;   //!< key bytes consumed above r
    NodeHeader hdr;   //!< r's header as the descent read it (r a node)
  };
  //! The child of n under b for a writer's descent: as lookup_leaf reads it (NODE256
  //! inline, the other types through their reader-safe find).
  [[gnu::always_inline]] static Ref descend_child(const NodeBase* n, std::uint8_t b) {
    const NodeType t = type_of(n);
    if (t == NodeType::node256) return load_ref(&reinterpret_cast<const Node256*>(n)->child[b]);
    if (t == Flavor::Node16::kType) return Flavor::Node16::find(n, b);
    if (t == Flavor::Node4::kType) return Flavor::Node4::find(n, b);
    if (t == NodeType::node48) return Node48Ops::find(n, b);
    unknown_node_type(t);
  }
  Status put(Key k, Value v, bool overwrite);
  Status put_empty(Key k, Value v);
  Status put_at_leaf(const At& at, Key k, Value v, bool overwrite);
  Status put_at_eok(const At& at, Key k, Value v, bool overwrite);
  Status add_child(const At& at, std::uint8_t b, Key k, Value v);
  template <class Ops>
  Status add_as(const At& at, std::uint8_t b, Key k, Value v);
  template <class Ops>
  Status add_by_copy(const At& at, std::uint8_t b, Key k, Value v, Ref fresh);
  Status split_prefix(const At& at, unsigned mismatch, Key k, Value v);
  [[gnu::noinline]] void publish_split(NodeLocks& lk, const At& at, NodeHeader child_hdr,
                                       Ref parent, Ref fresh);
  unsigned prefix_mismatch(const NodeBase* n, NodeHeader hdr, unsigned depth, Key k) const;
  Status build_node(NodeType t, const NodeHeader& hdr, Ref eok, const Entries& e, Ref* out);
  Status allocate_node(NodeType t, std::uint64_t* off);
  static unsigned spare_index(NodeType t);
  static NodeType spare_type(unsigned i);
  void reserve_spares();
  Status copy_with_header(NodeBase* n, const NodeHeader& hdr, Ref* out);
  Status rebuild(Ref* slot, NodeBase* n, NodeType t, const Entries& e);
  Status update_once(Key k, Value v);
  Status remove_once(Key k);
  Status remove_entry(const At& at, int b, Ref victim);
  Status merge_away(NodeLocks& lk, const At& at, int b, Ref victim);
  Status remove_child(NodeLocks& lk, const At& at, std::uint8_t cb, unsigned children, bool both);
  Status merge(NodeLocks& locks, Ref* slot, unsigned depth, Ref survivor);
  static NodeType grown_type(NodeType t);
  static NodeType shrunk_type(NodeType t, unsigned remaining);
  void free_ref(Ref r);    //!< a block no reader ever reached (never published)
  void retire_ref(Ref r);  //!< a block a durable commit unlinked: freed after the readers

  // --- recovery, checks, statistics
  Result<void> repair(Ref r, unsigned expected_depth);
  Result<void> check_ref(Ref r, unsigned depth, VerifyState& st) const;
  Result<void> check_node(const NodeBase* n, unsigned depth, VerifyState& st) const;
  template <class Visit>
  Result<void> walk_checked(Visit&& visit) const;
  void dump_ref(std::ostream& os, Ref r, unsigned indent, int byte) const;

  Pool& pool_;
  Anchor* anchor_;
  const std::uint64_t gen_;  //!< the pool's open generation (tags every obsolete mark)
  const std::uint32_t fresh_mark_;  //!< fresh_mark(gen_): an insert's new leaf carries it
  LockTable locks_;  //!< the writers' lock stripes (DRAM, node_lock.h)
  kit::WriterMutex spare_lock_;  //!< remove's reserve, anchor_->spare (DRAM)
  std::atomic<std::uint64_t> restarts_{0};
  mutable kit::EpochReclaimer epochs_{&kit::free_to_allocator, &pool_.allocator()};
};

}  // namespace wort::art_engine
