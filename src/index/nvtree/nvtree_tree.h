// index/nvtree/nvtree_tree.h — NV-Tree (Yang et al., FAST'15) as the WORT and FPTree papers
// measured it: append-only unsorted leaves in the pool (insert/delete entries, the count
// store commits), linked in key order; inner nodes in DRAM, rebuilt from the leaves at open
// and whenever a parent-of-leaf node overflows; a leaf split copies the live entries into
// two new leaves and links them in with one pointer store. See README.md in this folder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include "index/nvtree/nvtree_inner.h"
#include "index/nvtree/nvtree_layout.h"
#include "pm/faults.h"
#include "wort/index.h"

namespace wort {

class NvTree {
 public:
  static constexpr std::string_view kKind = "nvtree";
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;

  //! A new, empty tree. opts.words: [0] entries per leaf (4..4096, default 32), [1] leaves
  //! per PLN (default 128), [2] IN fanout (default 128), [3] leaves per PLN after a rebuild
  //! (default half a PLN; 1 = the original's one PLN per leaf).
  static Result<std::unique_ptr<NvTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds: checked walk + trace, then the DRAM inner nodes rebuilt.
  static Result<std::unique_ptr<NvTree>> open(Pool& pool);

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

  //! Whole rebuilds of the DRAM inner structure (the one at open included), their total
  //! time, and the time of the last open's leaf scan + rebuild.
  std::uint64_t rebuilds() const noexcept { return inner_.rebuilds(); }
  std::uint64_t rebuild_ns() const noexcept { return inner_.rebuild_ns(); }
  std::uint64_t recovery_ns() const noexcept { return recovery_ns_; }
  //! Leaf splits (two new leaves) and compactions (one new leaf) this handle made.
  std::uint64_t splits() const noexcept { return splits_; }
  std::uint64_t compactions() const noexcept { return compactions_; }
#if WORT_FAULTS
  //! Tests only: a deliberately broken variant whose splits omit the fence that orders the
  //! new leaves' write-back before the pointer store links them; the crash tests must
  //! catch it.
  void omit_split_fence_for_testing() noexcept { omit_split_fence_ = true; }
#endif

 private:
  enum class PutMode { insert, upsert, update };
  using Leaf = nvtree::Leaf;
  using Entry = nvtree::Entry;
  using Probe = nvtree::Probe;

  NvTree(Pool& pool, nvtree::Anchor* anchor) noexcept;
  Leaf* leaf(std::uint64_t off) const noexcept { return pool_.at<Leaf>(off); }
  const std::byte* base() const noexcept { return pool_.base(); }

  Status put(Key k, Value v, PutMode mode);
  Status insert_first_leaf(const Probe& p, Value v);
  Status key_meta_for(const Probe& p, const Leaf* l, int latest, std::uint64_t* meta);
  Status split_leaf(nvtree::Inner::Pos pos, const Probe* drop = nullptr);
  Status allocate_leaf(std::uint64_t* off);
  Status unlink_leaf(nvtree::Inner::Pos pos);
  void ensure_spare();
  void free_dead_key_blocks(const Leaf* l, const std::vector<Entry>& live);
  void rebuild_from_leaves();
  bool scan_from(const Probe* from, const Probe* hi, std::size_t max, std::size_t& n,
                 Visitor& vis) const;

  Pool& pool_;
  nvtree::Anchor* anchor_;
  nvtree::Inner inner_;
  std::uint64_t recovery_ns_ = 0, splits_ = 0, compactions_ = 0;
#if WORT_FAULTS
  bool omit_split_fence_ = false;
#else
  static constexpr bool omit_split_fence_ = false;  // no faults in this build (pm/faults.h)
#endif
};

}  // namespace wort
