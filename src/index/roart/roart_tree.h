// roart/roart_tree.h — ROART, the range-optimized persistent ART (Ma et al., FAST'21, §3):
// ART nodes N4/N16/N48/N256 whose N4/N16/N48 slots are Zentries (entry compression), leaf
// arrays of up to 64 fingerprinted leaf pointers under the inner nodes (leaf compaction),
// metadata that is volatile and rebuilt lazily per node when its generation is older than
// the pool's (selective metadata persistence), a pessimistic prefix with a constant level
// per node so an interrupted split or merge is detected (readers) and repaired (writers),
// and an internal split with two fences (minimally ordered split). See README.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>

#include "index/roart/roart_epoch.h"
#include "index/roart/roart_layout.h"
#include "index/roart/roart_leaf.h"
#include "index/roart/roart_leaf_array.h"
#include "index/roart/roart_node.h"
#include "pm/faults.h"
#include "wort/index.h"

namespace wort::roart {

class WriteLocks;

//! Test only (tests/index/roart/roart_instant_test.cc): while it reads true, open_instant's
//! background thread waits before its checked walk, so requests meet the pool while every
//! one of them still checks what it follows.
extern std::atomic<bool> g_hold_instant_check;

#if WORT_FAULTS  // test builds only (pm/faults.h)
//! Test only (tests/index/roart/roart_instant_test.cc): the background trace does not walk through
//! blocks made this session, so blocks moved under them are missed — the broken variant
//! that shows the instant-restart tests can fail.
extern std::atomic<bool> g_broken_trace_skips_session_blocks;
//! Test only: the background trace neither waits for a grace period nor reports the blocks
//! retired and not yet freed, so the allocator frees them and their later free() is a
//! second one.
extern std::atomic<bool> g_broken_trace_skips_retired_blocks;

//! Tests only (tests/index/roart/roart_race_concurrency_test.cc): pause hooks at the windows of the
//! three races the churn test found, so that a test forces each race every run. A
//! hook is called with its context by the operation that reached the window; nullptr (the
//! default) costs one relaxed load per operation (lookup: per hit in a leaf array; scan:
//! per leaf array), where the path already branches. The hook may block while another thread runs
//! the conflicting operation to its end; it must not write the tree from its own thread
//! (the paused operation holds an epoch pin that a nested one would end). noexcept: a hook
//! that could throw would make every caller keep an unwinding path (measured: +7
//! instructions per lookup, search-direct dense, callgrind).
using RaceHook = void (*)(void* ctx) noexcept;
//! find_leaf: a lookup's leaf in a leaf array has matched; before the leaf is returned.
extern std::atomic<RaceHook> g_lookup_matched_hook;
extern void* g_lookup_matched_ctx;
//! put_once: the lock-free descent has taken a node's child slot; before the slot is read.
extern std::atomic<RaceHook> g_write_descended_hook;
extern void* g_write_descended_ctx;
//! scan_array: after each used slot of a leaf array has been read.
extern std::atomic<RaceHook> g_scan_slot_hook;
extern void* g_scan_slot_ctx;
//! Tests only — the three races' old bugs, each caught by its test there. A lookup that,
//! having matched slot i's leaf, reads slot i again and returns what it holds now (checked
//! only in the window, when g_lookup_matched_hook is set: the path pays no second load).
extern std::atomic<bool> g_broken_lookup_rereads_slot;
//! A write that finds its child slot emptied takes it for an empty tree and publishes there
//! (in the copy of the write that runs while g_write_descended_hook is set: the window).
extern std::atomic<bool> g_broken_write_takes_empty_slot;
//! A scan that reports every leaf it read from an array, a key read in two slots twice (in
//! the copy of scan_array that runs while g_scan_slot_hook is set).
extern std::atomic<bool> g_broken_scan_reports_twice;
//! Calls the hook `h` holds (if any) with its context. Out of line and cold: the paths test
//! only whether a hook is set.
[[gnu::noinline, gnu::cold]] void call_race_hook(const std::atomic<RaceHook>& h,
                                                 void* const& ctx) noexcept;
#endif

class Roart {
 public:
  static constexpr std::string_view kKind = "roart";
  static constexpr std::size_t kMaxKeySize = kMaxRoartKey;
  static constexpr bool kConcurrent = true;  //!< ROWEX: readers lock-free, writers lock nodes

  //! A new, empty tree. opts.words[0]: mechanisms to turn off (kNoLeafCompaction, ...).
  static Result<std::unique_ptr<Roart>> create(Pool& pool, const IndexOptions& opts);
  //! Checks the anchor and runs the allocator's trace (kit::recover). Nothing else: node
  //! metadata is rebuilt on first touch, prefixes are repaired by the next writer.
  static Result<std::unique_ptr<Roart>> open(Pool& pool);
  //! Instant restart (§3.4.2, roart_restart.cc): checks the anchor and returns; the checked
  //! walk open() runs, then the allocator's trace, run on a background thread while the tree
  //! serves requests. Until the walk has passed, readers check every word they follow and
  //! writers wait for it; a walk that fails refuses every request from then on. `hold`
  //! (tests): while it reads true the trace (after the walk) waits (checked every 64 blocks).
  static Result<std::unique_ptr<Roart>> open_instant(Pool& pool,
                                                     const std::atomic<bool>* hold = nullptr);
  //! True once the background trace of open_instant has ended (or there was none).
  bool trace_done() const noexcept {
    const int s = trace_state_.load(std::memory_order_acquire);
    return s != kTraceWalking && s != kTraceSynchronizing;
  }
  //! True while the background trace, its walk done, waits for the operations that
  //! overlapped it to finish (tests: a reader pinned then holds it here).
  bool trace_synchronizing() const noexcept {
    return trace_state_.load(std::memory_order_acquire) == kTraceSynchronizing;
  }
  //! True once open_instant's checked walk has passed (or there was none): requests take
  //! the unchecked paths.
  bool walk_passed() const noexcept {
    return mode_.load(std::memory_order_acquire) == kServing;
  }
  //! Waits for the background trace; its error if it failed (then the chunks it was to
  //! decide stay frozen: nothing reused, nothing lost; if its checked walk failed, every
  //! request answers corrupt / nothing).
  Result<void> wait_trace();

  Status insert(Key k, Value v) { return put(k, v, /*overwrite=*/false); }
  Status upsert(Key k, Value v) { return put(k, v, /*overwrite=*/true); }
  Status update(Key k, Value v);
  std::optional<Value> lookup(Key k) const;
  Status remove(Key k);
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

  std::uint64_t flags() const noexcept { return flags_; }
  //! Nodes and arrays whose metadata this handle rebuilt (generation check) since open.
  std::uint64_t rebuilds() const noexcept { return rebuilds_.load(std::memory_order_relaxed); }
  //! Prefix words this handle repaired since open.
  std::uint64_t repairs() const noexcept { return repairs_.load(std::memory_order_relaxed); }
  //! Unlinked blocks waiting for their epoch (freed once no reader can hold them).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }
  //! Frees every block retired so far, once the readers pinned now have unpinned
  //! (Index::reclaim_retired). Not from inside an operation of this tree.
  void reclaim_retired() { epochs_.reclaim_everything(); }

  ~Roart();
  Roart(const Roart&) = delete;
  Roart& operator=(const Roart&) = delete;

 private:
  struct ScanState;
  struct CheckState;

  Roart(Pool& pool, Anchor* anchor);
  // --- instant restart (roart_restart.cc)
  Result<void> trace_live(BlockVisitorFn v, const std::atomic<bool>* hold);
  Result<void> trace_walk(BlockVisitorFn v, const std::atomic<bool>* hold) const;
  static constexpr int kTraceNone = 0, kTraceWalking = 1, kTraceSynchronizing = 2,
                       kTraceDone = 3, kTraceFailed = 4;
  //! mode_: kServing, the fast paths; kChecking, open_instant's checked walk has not passed
  //! yet (readers check what they follow, writers wait); kRefused, it failed.
  static constexpr std::uint8_t kChecking = 1, kServing = 2, kRefused = 3;
  //! Writers while the walk has not passed: wait for it; ok once it passed, else corrupt.
  [[gnu::noinline, gnu::cold]] Status await_walk() const noexcept;
  // The checked paths (roart_restart.cc): every word checked as visit_reachable checks it
  // before it is followed; nullptr / false on damage. No metadata is used or rebuilt, no
  // lock taken: these paths write nothing to the pool.
  [[gnu::noinline, gnu::cold]] std::optional<Value> lookup_checked(Key k) const;
  [[gnu::noinline, gnu::cold]] std::size_t scan_checked(Key lo, const Key* hi, std::size_t max,
                                                        Visitor& v) const;
  const Leaf* find_leaf_checked(Key k) const;
  bool ref_ok(Ref r) const noexcept {
    return (r & ~kRefMask) == 0 && (r & kTagMask) <= kTagArray;
  }
  bool tag_ok(std::uint64_t w, unsigned shift, std::uint64_t flags) const noexcept;
  const NodeBase* checked_node(Ref r, unsigned depth) const noexcept;
  const LeafArray* checked_array(Ref r) const noexcept;
  const Leaf* checked_leaf(Ref r, unsigned depth) const noexcept;
  const Leaf* checked_slot_leaf(LeafSlot s, unsigned depth) const noexcept;
  const Leaf* checked_any_leaf(const NodeBase* n) const noexcept;

  // --- blocks and the generation check (roart_tree.cc)
  NodeBase* node(Ref r) const { return pool_.at<NodeBase>(ref_offset(r)); }
  LeafArray* array(Ref r) const { return pool_.at<LeafArray>(ref_offset(r)); }
  Leaf* leaf(Ref r) const { return pool_.at<Leaf>(ref_offset(r)); }
  Leaf* slot_leaf_ptr(LeafSlot s) const { return pool_.at<Leaf>(slot_leaf(s)); }
  //! The generation check (§3.3.1), inline: one compare unless the block is stale.
  NodeBase* touch(Ref r) const {
    NodeBase* n = node(r);
    if (n->generation.get() != gen_) [[unlikely]] rebuild_latched(n);
    return n;
  }
  LeafArray* touch_array(Ref r) const {
    LeafArray* a = array(r);
    if (a->generation.get() != gen_) [[unlikely]] rebuild_latched(a);
    return a;
  }
  void rebuild_latched(NodeBase* n) const;
  void rebuild_latched(LeafArray* a) const;
  int find_in_array(const LeafArray* a, Key k, std::uint16_t fp,
                    const Leaf** match = nullptr) const;
  const Leaf* any_leaf(Ref r) const;
  bool prefix_consistent(const NodeBase* n, unsigned depth) const {
    return depth + n->prefix.get().len == n->level;
  }
  PrefixWord prefix_from(Key w, unsigned from, unsigned to) const;
  NodeFlags node_flags() const noexcept;
  bool lc() const noexcept { return (flags_ & kNoLeafCompaction) == 0; }
  const Leaf* find_leaf(Key k) const;
#if WORT_FAULTS
  const Leaf* lookup_window(const LeafArray* a, unsigned i, const Leaf* match) const noexcept;
#endif

  //! The lock word guarding the slot that names a child of `owner` (nullptr: the anchor).
  Shared<std::uint64_t>* owner_lock(NodeBase* owner) const noexcept {
    return owner == nullptr ? &root_lock_ : &owner->lock;
  }

  // --- writes (roart_insert.cc)
  Status put(Key k, Value v, bool overwrite);
  //! kHooked: the copy put() runs while g_write_descended_hook is set (test builds), which
  //! calls it at the window; the other copy has no hook check in its descent loop. Without
  //! WORT_FAULTS only the other copy exists.
  template <bool kHooked>
  bool put_once(Key k, Value v, bool overwrite, Status* out);
  //! One step of a write attempt: done (*out is the answer), restart from the root, or go on.
  enum class WriteStep : std::uint8_t { done, restart, go_on };
  // put_once's steps (roart_insert.cc), inlined into it: the write path's code stays one body.
  [[gnu::always_inline]] inline WriteStep put_in_array_with_room(Ref r, Key k, Value v,
                                                                 bool overwrite, Status* out);
  [[gnu::always_inline]] inline bool put_at_slot(NodeBase* owner, ChildSlot slot, Ref r,
                                                 unsigned depth, Key k, Value v, bool overwrite,
                                                 Status* out);
  [[gnu::always_inline]] inline bool descend_unlocked(NodeBase* n, unsigned pos, Key k,
                                                      NodeBase*& owner, ChildSlot& slot,
                                                      unsigned& depth) const;
  [[gnu::always_inline]] inline WriteStep put_at_node(NodeBase*& owner, ChildSlot& slot, Ref r,
                                                      NodeBase* n, unsigned pos,
                                                      unsigned& depth, Key k, Value v,
                                                      bool overwrite, Status* out);
  Status put_at_leaf(ChildSlot slot, unsigned depth, Key k, Value v, bool overwrite);
  Status put_in_array(WriteLocks& l, ChildSlot slot, unsigned depth, Key k, Value v, bool overwrite);
  Status put_at_eok(NodeBase* n, Key k, Value v, bool overwrite);
  Status add_child(WriteLocks& l, ChildSlot slot, NodeBase* n, std::uint8_t b, Key k, Value v);
  Status split_prefix(ChildSlot slot, NodeBase* n, unsigned depth, unsigned mismatch, Key k,
                      Value v);
  Status split_array(WriteLocks& l, ChildSlot slot, LeafArray* a, unsigned depth,
                     std::uint64_t fresh, std::uint16_t fp);
  Status grow_array(WriteLocks& l, ChildSlot slot, LeafArray* a, std::uint64_t fresh,
                    std::uint16_t fp);
  Status new_child(Key k, Value v, Ref* out);
  Status make_node(NodeType t, std::uint32_t level, const PrefixWord& p, Ref eok,
                   const Children& c, Ref* out);
  Status make_array(const ArrayItem* items, unsigned n, Ref* out);
  //! `p` is ONE load of n's prefix word: a writer may change it between two loads.
  unsigned prefix_mismatch(const NodeBase* n, const PrefixWord& p, unsigned depth,
                           Key k) const;
  void repair_prefix(NodeBase* n, unsigned depth);
  //! Retires an unlinked block (freed when no reader can hold it; see roart_epoch.h).
  void free_ref(Ref r) { epochs_.retire(ref_offset(r)); }
  //! visit_blocks' checked walk of what the root reaches (not the retired blocks).
  Result<void> visit_reachable(BlockVisitorFn v) const;

  // --- remove (roart_remove.cc)
  bool remove_once(Key k, Status* out);
  bool remove_at_root(ChildSlot slot, Ref root, Key k, Status* out);
  bool remove_at_node(NodeBase* owner, ChildSlot slot, Ref r, NodeBase* n, unsigned depth, Key k,
                      Status* out);
  Status remove_in_array(WriteLocks& l, ChildSlot slot, NodeBase* parent, ChildSlot parent_slot,
                         unsigned parent_depth, std::uint8_t b, Key k);
  bool shrink_array(WriteLocks& l, ChildSlot aslot, LeafArray* a, unsigned i);
  Status remove_child(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth, std::uint8_t b,
                      ChildSlot cs);
  Status remove_eok(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth);
  Status merge(WriteLocks& l, ChildSlot slot, NodeBase* n, unsigned depth, Ref survivor);
  void free_victim(WriteLocks& l, Ref v);

  // --- scans (roart_scan.cc)
  //! kChecked: the scan of a pool whose checked walk has not passed (every word checked
  //! first, no metadata; damage stops the scan).
  template <bool kChecked>
  bool scan_ref(Ref r, unsigned depth, bool bounded, ScanState& st) const;
  template <bool kChecked>
  bool scan_node(const NodeBase* n, unsigned depth, bool bounded, ScanState& st) const;
  bool scan_array_checked(Ref r, unsigned depth, bool bounded, ScanState& st) const;
  //! kHooked: the copy that calls g_scan_slot_hook after each used slot (test builds); the
  //! other checks for a hook once per array. Without WORT_FAULTS only the other copy exists.
  template <bool kHooked>
  bool scan_array(const LeafArray* a, unsigned depth, bool bounded, ScanState& st) const;
  bool emit(const Leaf* l, bool bounded, ScanState& st) const;

  // --- checks (roart_check.cc)
  Result<void> check_ref(Ref r, unsigned depth, std::string& path, CheckState& st) const;
  Result<void> check_node(const NodeBase* n, unsigned depth, std::string& path,
                          CheckState& st) const;
  Result<void> check_leaf(const Leaf* l, const std::string& path, CheckState& st) const;
  void dump_ref(std::ostream& os, Ref r, unsigned indent, int byte) const;

  Pool& pool_;
  Anchor* anchor_;
  std::uint64_t flags_;
  std::uint64_t gen_;  //!< the pool generation of this session
  std::atomic<std::uint8_t> mode_{kServing};  //!< kServing / kChecking / kRefused
  mutable std::atomic<std::uint64_t> rebuilds_{0};
  std::atomic<std::uint64_t> repairs_{0};
  mutable Shared<std::uint64_t> root_lock_{0};  //!< DRAM: guards anchor.root (roart_lock.h)
  mutable Epochs epochs_;
  std::atomic<int> trace_state_{kTraceNone};
  Error trace_error_;
  std::thread trace_thread_;  //!< open_instant's background trace (joined by the destructor)
};

}  // namespace wort::roart
