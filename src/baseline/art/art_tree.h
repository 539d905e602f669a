// baseline/art/art_tree.h — the classical, volatile Adaptive Radix Tree (Leis, Kemper,
// Neumann, ICDE 2013), kept entirely in DRAM: the baseline the persistent radix trees are
// measured against. It issues no flush or fence and touches no pool memory.
//
// Registered as kind "art". Because nothing survives the process, open() refuses: there
// is nothing to reopen. See README.md in this folder for the algorithm.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "baseline/art/arena.h"
#include "baseline/art/ref.h"
#include "wort/index.h"

namespace wort::art {

struct Node;
struct Leaf;

class VolatileArt {
 public:
  static constexpr std::string_view kKind = "art";
  static constexpr std::size_t kMaxKeySize = 65000;  //!< as the persistent ART family
  static constexpr bool kPersistent = false;  //!< nothing survives the process

  //! A new empty tree; the pool only has to be an "art" pool (nothing is stored in it).
  static Result<std::unique_ptr<VolatileArt>> create(Pool& pool, const IndexOptions& opts);
  //! Always fails with invalid_argument: a volatile index has nothing to reopen.
  static Result<std::unique_ptr<VolatileArt>> open(Pool& pool);

  VolatileArt() = default;
  ~VolatileArt();
  VolatileArt(const VolatileArt&) = delete;
  VolatileArt& operator=(const VolatileArt&) = delete;

  Status insert(Key k, Value v);  //!< exists if present
  Status upsert(Key k, Value v);  //!< insert or overwrite
  Status update(Key k, Value v);  //!< not_found if absent
  //! Inline: only the descent (find_value) is a call. Built out of line, GCC returned the
  //! optional through the stack, a byte store read back as a word (a failed store
  //! forward): 15-20% slower lookups at 10M keys than returning the value's address.
  std::optional<Value> lookup(Key k) const {
    const Value* v = find_value(k);
    if (v == nullptr) return std::nullopt;
    return *v;
  }
  Status remove(Key k);  //!< not_found if absent; shrinks and collapses nodes
  std::size_t scan(Key from, std::size_t max, Visitor vis) const;
  std::size_t range(Key lo, Key hi, Visitor vis) const;

  //! Keys, leaf depth (inner nodes on the path from the root to the leaf), nodes by type,
  //! DRAM bytes of nodes and leaves; pm_bytes is 0.
  IndexStats stats() const;
  //! Order, prefixes, per-type node invariants, the key count.
  Result<void> verify() const;
  void dump(std::ostream& os) const;
  //! Visits nothing: no block of the pool belongs to this index.
  Result<void> visit_blocks(BlockVisitorFn) const { return {}; }

  std::size_t size() const noexcept { return count_; }

 private:
  enum class PutMode { insert, upsert };

  Status put(Key k, Value v, PutMode mode);
  Status put_at_leaf(Ref* slot, std::size_t depth, Key k, Value v, PutMode mode);
  Status put_terminal(Node* n, Key k, Value v, PutMode mode);
  void split_prefix(Ref* slot, std::size_t depth, std::size_t matched, Key k, Value v);
  void add_child_growing(Ref* slot, std::uint8_t byte, Leaf* child);
  Leaf* find_leaf(Key k) const noexcept;
  //! The value of key k in its leaf, or nullptr: lookup's descent, out of line.
  const Value* find_value(Key k) const noexcept;
  Status remove_terminal(Ref* slot, Key k);
  Status remove_leaf_child(Ref* slot, std::uint8_t byte, Key k);
  void after_remove(Ref* slot);
  void collapse(Ref* slot);

  friend class ArtTreeTestPeer;  // tests corrupt the tree on purpose to prove verify() fails

  Arena arena_;  // every node and leaf of this tree (arena.h)
  Ref root_;
  std::size_t count_ = 0;
};

}  // namespace wort::art
