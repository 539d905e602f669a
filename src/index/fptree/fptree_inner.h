// index/fptree/fptree_inner.h — the FPTree's inner nodes, in DRAM (selective persistence,
// paper §4.1): a classic B+-tree index over the persistent leaves, with sorted separator
// keys, rebuilt from the leaf list on every open (Alg. 9, bulk-load style).
//
//   InnerTree                      root (height 2 here)
//     Node{keys ["m"], kids}          |  ["m"]  |
//                                    /           \    .
//     Node{leaf_level}       | ["d","h"] |     | ["q"] |
//                            /    |     \       /     \    .
//     pool leaves          L0 -> L1 -> L2 -> L3 -> L4 -> 0     (the persistent list)
//
// Child i of a node covers [keys[i-1], keys[i]) (unbounded at the ends); a separator is the
// smallest key of the right leaf when it was made (a split's first key of the new leaf, or
// the leaf's smallest key at rebuild), so keys removed later leave the routing valid.
// Nodes never merge (DRAM, the paper does not merge either): a node that loses its last
// child is removed from its parent and a root with one inner child collapses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wort/key.h"
#include "wort/status.h"

namespace wort::fptree_index {

class InnerTree {
 public:
  struct Node {
    bool leaf_level = true;                   //!< children are pool leaf offsets
    std::vector<std::string> keys;            //!< count() - 1 separators, ascending
    std::vector<std::uint64_t> heads;         //!< first 8 bytes of each key, big-endian,
                                              //!< zero-padded: the binary search compares
                                              //!< these and the strings only on a tie
    std::vector<std::uint64_t> leaves;        //!< leaf_level: leaf offsets
    std::vector<std::unique_ptr<Node>> kids;  //!< otherwise: child nodes
    std::size_t count() const noexcept { return leaf_level ? leaves.size() : kids.size(); }
  };
  //! Root-to-leaf positions: (node, child index) per level, root first.
  using Path = std::vector<std::pair<Node*, std::size_t>>;

  explicit InnerTree(std::uint32_t fanout) noexcept : fanout_(fanout) {}

  bool empty() const noexcept { return root_ == nullptr; }
  //! Levels of inner nodes (0 for an empty tree).
  std::uint32_t height() const noexcept { return height_; }
  std::uint32_t fanout() const noexcept { return fanout_; }

  //! Replaces the tree by one over `leaves` (offset, smallest key), in list order.
  void build(std::vector<std::pair<std::uint64_t, std::string>> leaves);
  //! Makes a tree of one leaf.
  void reset_to(std::uint64_t leaf);
  //! The leaf whose range holds `k` (precondition: !empty()).
  std::uint64_t find(Key k) const noexcept;
  //! The same, with the path to it.
  std::uint64_t find(Key k, Path* path) const;
  //! The leaf before the one `path` ends at, or 0 if it is the first.
  std::uint64_t previous_leaf(const Path& path) const noexcept;
  //! Adds `right` after the leaf `path` ends at, separated by `sep` (a split).
  void insert_after(const Path& path, std::string sep, std::uint64_t right);
  //! Removes the leaf `path` ends at (an unlinked leaf).
  void erase(const Path& path);

  //! Calls f(leaf, lo, hi) for every leaf in order with its bounds (nullptr = unbounded).
  //! Fails with corrupt if a node is empty, overfull, unsorted, or leaves sit at
  //! different depths.
  Result<void> for_each_leaf(
      const std::function<void(std::uint64_t, const std::string*, const std::string*)>& f) const;

  std::uint64_t node_count() const noexcept;
  //! DRAM the nodes hold: node objects, vectors' capacity, heap-allocated key bytes.
  std::uint64_t dram_bytes() const noexcept;

 private:
  static void sync_heads(Node* n);
  void split_up(Path path);
  void erase_at(Path& path);

  std::unique_ptr<Node> root_;
  std::uint32_t height_ = 0;
  std::uint32_t fanout_;
};

}  // namespace wort::fptree_index
