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
// Concurrency (issue 13): lookup, scan and range take no lock and never wait: they pin the
// tree's epoch and read every word a writer may change with one atomic load; the writes
// (insert, upsert, update, remove) are serialised by one writer lock per tree (a DRAM spin
// lock, outside the pool). Every commit is non-temporal (pm::commit_nt / pm::publish_nt: no
// reader sees a word before it is durable); blocks a remove unlinks are retired to an epoch
// reclaimer. The states a writer leaves between its stores are the crash states recovery
// knows, and readers cope with them the same way. verify(), stats(), dump() and
// visit_blocks() want a quiescent tree. See README.md, "Concurrency".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "index/common/epoch.h"
#include "index/common/writer_lock.h"
#include "index/wort/wort_node.h"
#include "wort/index.h"

namespace wort {

namespace wort_index {
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
}  // namespace wort_index

class WortTree {
 public:
  static constexpr std::string_view kKind = "wort";
  //! Every entry point may be called from many threads at once (see the top of this file).
  static constexpr bool kConcurrent = true;

  //! A new, empty tree in a pool whose root is still 0.
  static Result<std::unique_ptr<WortTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds; after a crash, hands the allocator its trace (no other repair
  //! is needed at open: interrupted splits are repaired lazily, see README.md).
  static Result<std::unique_ptr<WortTree>> open(Pool& pool);

  Status insert(Key k, Value v) {
    WriteLock w(*this);
    return put(k, v, PutMode::insert);
  }
  Status upsert(Key k, Value v) {
    WriteLock w(*this);
    return put(k, v, PutMode::upsert);
  }
  Status update(Key k, Value v) {
    WriteLock w(*this);
    return put(k, v, PutMode::update);
  }
  //! Inline: the bench's direct loop and the adapter call the lookup for the key's length
  //! directly (the out-of-line dispatch cost more than the epoch pin each one now takes).
  std::optional<Value> lookup(Key k) const {
    return k.size() <= 8 ? lookup_short(k) : lookup_long(k);
  }
  Status remove(Key k) {
    WriteLock w(*this);
    return remove_key(k);
  }
  std::size_t scan(Key from, std::size_t max, Visitor v) const;
  std::size_t range(Key lo, Key hi, Visitor v) const;
  IndexStats stats() const;
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  Result<void> visit_blocks(BlockVisitorFn v) const;

  //! Node headers this handle has repaired (RecoverHeader) since it was opened.
  std::uint64_t headers_repaired() const noexcept { return headers_repaired_; }
  //! Unlinked blocks waiting for readers to unpin (tests).
  std::size_t retired_pending() const noexcept { return epochs_.pending(); }

 private:
  //! The tree's writer lock (index/common/writer_lock.h): held for one whole write; on
  //! release, retired blocks no reader can hold are freed.
  using WriteLock = kit::WriteGuard<WortTree>;
  friend WriteLock;

  enum class PutMode { insert, upsert, update };
  using Node = wort_index::Node;
  using HeaderFields = wort_index::HeaderFields;

  WortTree(Pool& pool, wort_index::Anchor* anchor) noexcept;
  //! lookup() of a key of at most 8 bytes (wort_tree.cc says how it differs).
  std::optional<Value> lookup_short(Key k) const;
  //! lookup() of a longer key.
  std::optional<Value> lookup_long(Key k) const;

  // wort_insert.cc
  Status put(Key k, Value v, PutMode mode);
  Status put_at_leaf(std::uint64_t* slot, std::uint32_t depth, Key k, Value v, PutMode mode);
  Status insert_into_empty_slot(std::uint64_t* slot, Key k, Value v);
  Status split_leaf(std::uint64_t* slot, std::uint32_t depth, Key k, Value v);
  Status split_prefix(std::uint64_t* slot, Node* n, const HeaderFields& h,
                      std::uint32_t matched, Key k, Value v);
  std::uint32_t match_full_prefix(const Node* n, const HeaderFields& h, Key k) const;

  // wort_remove.cc
  struct RemovePath;
  Status remove_key(Key k);
  Status unlink_leaf(const RemovePath& path);
  void merge_into_parent(const RemovePath& path, std::uint64_t survivor);

  // wort_recovery.cc
  HeaderFields repair_header(Node* n, std::uint32_t depth);

  Pool& pool_;
  wort_index::Anchor* anchor_;
  wort_index::Blocks blocks_;
  std::uint64_t headers_repaired_ = 0;  //!< written by the writer holding the lock
  kit::WriterMutex writer_;      //!< the writer lock (WriteLock)
  mutable kit::EpochReclaimer epochs_{&kit::free_to_allocator, &pool_.allocator()};
};

}  // namespace wort
