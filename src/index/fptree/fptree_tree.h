// index/fptree/fptree_tree.h — the FPTree (Oukid et al., SIGMOD'16): a hybrid SCM-DRAM
// B+-tree. Leaves are persistent (a linked list in the pool, unsorted slots, a validity
// bitmap, one-byte fingerprints); inner nodes are DRAM, rebuilt from the leaves on open.
// Single-threaded (see README.md for what the concurrent variant would add).
//
// Every operation commits with one 8-byte store: a leaf's bitmap (insert, update, remove),
// a leaf's next word or the anchor's head (removing a leaf's last key, the first insert).
// A split runs under the anchor's micro-log {cur, new} and is finished by open() if a crash
// interrupts it. See README.md for the commit table and what recovery repairs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "index/fptree/fptree_inner.h"
#include "index/fptree/fptree_layout.h"
#include "index/fptree/fptree_leaf.h"
#include "wort/index.h"

namespace wort {

class FPTree {
 public:
  static constexpr std::string_view kKind = "fptree";

  //! IndexOptions words: [0] leaf capacity (2..64, default 56), [1] inner fanout (3..65536,
  //! default 4096), [2] fingerprint hash (0 mixed, 1 constant: tests only).
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

  //! Splits open() finished from the micro-log (tests).
  std::uint64_t splits_recovered() const noexcept { return splits_recovered_; }
  //! Milliseconds open() spent in each phase: checked walk + trace, log replay, rebuild.
  struct OpenTimes {
    double trace_ms = 0, replay_ms = 0, rebuild_ms = 0;
  };
  const OpenTimes& open_times() const noexcept { return open_times_; }

 private:
  enum class PutMode { insert, upsert, update };
  using LeafRef = fptree_index::LeafRef;
  using Path = fptree_index::InnerTree::Path;

  FPTree(Pool& pool, fptree_index::Anchor* anchor);

  LeafRef leaf(std::uint64_t off) const noexcept { return LeafRef(pool_.base(), off, geo_); }
  std::uint8_t fp_of(Key k) const noexcept;

  // fptree_insert.cc
  Status put(Key k, Value v, PutMode mode);
  Status put_first_leaf(Key k, Value v, std::uint64_t key_word, bool inline_key);
  Status make_key_word(Key k, std::uint64_t* word, bool* inline_key);
  void drop_key_word(std::uint64_t word, bool inline_key) noexcept;
  static bool write_slot(LeafRef l, int s, std::uint64_t key_word, bool inline_key, Value v,
                         std::uint8_t fp) noexcept;

  // fptree_split.cc
  Status split_leaf(LeafRef l, const Path& path, std::uint64_t* right, std::string* sep);
  std::string split_copy(LeafRef cur, LeafRef nu) const;
  void split_link(LeafRef cur, LeafRef nu) const;
  void reset_log() const noexcept;
  Result<void> replay_split_log();

  // fptree_remove.cc
  Status remove_last_key(LeafRef l, const Path& path);

  // fptree_recovery.cc
  Result<void> rebuild_inner();
  std::string smallest_key(LeafRef l) const;
  //! Sorted valid slots of a leaf.
  std::vector<int> sorted_slots(LeafRef l) const;

  Pool& pool_;
  fptree_index::Anchor* anchor_;
  fptree_index::LeafGeometry geo_;
  fptree_index::HashKind hash_;
  fptree_index::InnerTree inner_;
  std::uint64_t splits_recovered_ = 0;
  OpenTimes open_times_;
  mutable Path path_;  // scratch, reused by writers
};

}  // namespace wort
