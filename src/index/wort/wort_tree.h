// index/wort/wort_tree.h — WORT, the write-optimal radix tree (Lee et al., FAST'17, §3).
//
// A path-compressed radix tree over 4-bit partial keys whose every update commits with one
// failure-atomic 8-byte store: a child pointer (insert, split, remove, merge) or a leaf's
// value word (upsert). A split rewrites the split node's header (depth, prefix length,
// prefix) in one 8-byte store before the commit; if a crash falls between the two, the
// node's stored depth disagrees with the depth it is reached at, readers skip its prefix
// check (the full key is compared at the leaf) and the next writer that passes it repairs
// the header from a leaf below (RecoverHeader). See README.md in this folder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "index/wort/wort_node.h"
#include "wort/index.h"

namespace wort {

class WortTree {
 public:
  static constexpr std::string_view kKind = "wort";

  //! A new, empty tree in a pool whose root is still 0.
  static Result<std::unique_ptr<WortTree>> create(Pool& pool, const IndexOptions& opts);
  //! The tree a pool holds; after a crash, hands the allocator its trace (no other repair
  //! is needed at open: interrupted splits are repaired lazily, see README.md).
  static Result<std::unique_ptr<WortTree>> open(Pool& pool);

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

  //! Node headers this handle has repaired (RecoverHeader) since it was opened.
  std::uint64_t headers_repaired() const noexcept { return headers_repaired_; }

 private:
  enum class PutMode { insert, upsert, update };
  using Node = wort_index::Node;
  using HeaderFields = wort_index::HeaderFields;

  WortTree(Pool& pool, wort_index::Anchor* anchor) noexcept;
  //! lookup() of a key of at most 8 bytes (wort_tree.cc says how it differs).
  std::optional<Value> lookup_short(Key k) const;

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
  Status unlink_leaf(const RemovePath& path);
  void merge_into_parent(const RemovePath& path, std::uint64_t survivor);

  // wort_recovery.cc
  HeaderFields repair_header(Node* n, std::uint32_t depth);

  Pool& pool_;
  wort_index::Anchor* anchor_;
  wort_index::Blocks blocks_;
  std::uint64_t headers_repaired_ = 0;
};

}  // namespace wort
