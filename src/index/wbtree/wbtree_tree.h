// index/wbtree/wbtree_tree.h — wB+Tree (Chen & Jin, VLDB'15) as the WORT and FPTree papers
// measured it: a B+-tree wholly in the pool, unsorted entries behind a validity bitmap and a
// sorted one-byte slot array (binary search), the bitmap store committing every insert and
// remove; splits made crash-safe by a redo micro-log in the anchor (the FPTree paper's
// choice for its wBTree). See README.md in this folder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include "index/wbtree/wbtree_layout.h"
#include "index/wbtree/wbtree_node.h"
#include "pm/faults.h"
#include "wort/index.h"

namespace wort {

class WbTree {
 public:
  static constexpr std::string_view kKind = "wbtree";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;

  //! A new, empty tree. opts.words[0] = entries per leaf, words[1] = entries per inner node
  //! (0: the defaults, 63 and 32; each 4..63).
  static Result<std::unique_ptr<WbTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds: checked walk + allocator trace, then redo of a split the
  //! micro-log names.
  static Result<std::unique_ptr<WbTree>> open(Pool& pool);

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

  //! Splits this handle redid at open from the micro-log (0 or 1).
  std::uint64_t splits_redone() const noexcept { return splits_redone_; }

  //! Splits this handle made whose node was its parent's first entry with a key at or above
  //! the separator, so that the entry's key became "" first (split step 0).
  std::uint64_t first_keys_cleared() const noexcept { return first_keys_cleared_; }

#if WORT_FAULTS
  //! Tests only: stop the next split after `step` of its steps (1: log written, 2: sibling
  //! logged, 3: attached to the parent, 4: node truncated), as a crash there would.
  void stop_next_split_after_for_testing(int step) noexcept { stop_split_after_ = step; }
  //! Tests only: a deliberately broken variant whose splits omit the fence that orders the
  //! new sibling's write-back before log.sibling names it; the crash tests must catch it.
  void omit_sibling_fence_for_testing() noexcept { omit_sibling_fence_ = true; }
#endif

 private:
  enum class PutMode { insert, upsert, update };
  using Node = wbtree::Node;
  using Entry = wbtree::Entry;
  using Probe = wbtree::Probe;
  struct Path {
    std::uint64_t node[64];
    unsigned depth = 0;
  };

  WbTree(Pool& pool, wbtree::Anchor* anchor) noexcept;
  Node* node(std::uint64_t off) const noexcept { return pool_.at<Node>(off); }
  const std::byte* base() const noexcept { return pool_.base(); }
  unsigned capacity_for(std::uint32_t level) const noexcept;

  // wbtree_tree.cc
  Status put(Key k, Value v, PutMode mode);
  Status insert_into_empty_tree(const Probe& p, Value v);
  void descend(const Probe& p, Path& path) const;
  Status make_entry(const Probe& p, Value v, Entry* e);
  void free_entry_key(const Entry& e);
  void collapse_root();

  // wbtree_split.cc
  Status grow_root();
  Status split(std::uint64_t n_off, std::uint64_t p_off);
  Status separator_for(const Entry& first, std::uint64_t s_off, Entry* e);
  void attach_sibling(Node* p, const Entry& sep);
  void drop_moved_entries(Node* n, const Node* s);
  void clear_log();
  Status redo_logged_split();

  // wbtree_remove.cc
  void unlink_chain(const Path& path, unsigned top);

  // wbtree_scan.cc
  bool scan_node(std::uint64_t off, const Probe* from, const Probe* hi, std::size_t& left,
                 std::size_t& n, Visitor& vis) const;

  Pool& pool_;
  wbtree::Anchor* anchor_;
  std::uint64_t splits_redone_ = 0;
  std::uint64_t first_keys_cleared_ = 0;
#if WORT_FAULTS
  int stop_split_after_ = 0;
  bool omit_sibling_fence_ = false;
#else  // no faults in this build (pm/faults.h)
  static constexpr int stop_split_after_ = 0;
  static constexpr bool omit_sibling_fence_ = false;
#endif
};

}  // namespace wort
