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
//
// Concurrency (the TSX substitute of paper §4.4, README "Concurrency"): readers traverse
// optimistically with a version per node, as optimistic lock coupling does —
//
//   v = read_version(n)          spins while a writer is inside n; restart if n is obsolete
//   i = route(n, k); c = kid(i)  every field an atomic (relaxed) load, the count clamped
//   validate(n, v)               before c is followed (or, at the leaf level, after the
//                                leaf's own version is read: FPTree::find_leaf)
//
// Writers of inner nodes (a leaf split's parent update, an unlinked leaf's erase, a root
// change) hold the tree's one structure lock (FPTree::smo_, the role of the paper's TSX
// transaction) and bracket every change of a node with begin_write/end_write, which make
// its version odd and then bump it. Node arrays have a fixed capacity (fanout + 1 children),
// so a reader never reads a freed array; a node or separator a writer takes out of the tree
// is handed to `retire` (FPTree: the epoch reclaimer) and freed once no reader can hold it.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pm/persist.h"
#include "wort/key.h"
#include "wort/status.h"

namespace wort::fptree_index {

//! Seqlock fences: no-ops on x86 (TSO) but for the compiler; under ThreadSanitizer, which
//! does not model atomic_thread_fence, nothing (every racing access is atomic there).
inline void seq_acquire_fence() noexcept {
#if !defined(__SANITIZE_THREAD__)
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
}
inline void seq_release_fence() noexcept {
#if !defined(__SANITIZE_THREAD__)
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

//! First 8 bytes of k as a big-endian integer, zero-padded. If key_head(a) < key_head(b)
//! then a < b in byte-string order (the first differing byte decides, and a zero pad in a
//! against a real byte in b means a is a prefix of b); equal heads decide nothing. One load
//! and a byte swap for a key of 8 bytes or more.
inline std::uint64_t key_head(Key k) noexcept {
  std::uint64_t w = 0;
  if (k.size() >= 8) {
    std::memcpy(&w, k.data(), 8);
  } else {
    for (std::size_t i = 0; i < k.size(); ++i)
      w |= std::uint64_t{static_cast<std::uint8_t>(k[i])} << (8 * i);  // memory order
  }
  if constexpr (std::endian::native == std::endian::little)
    return __builtin_bswap64(w);
  else
    return k.size() >= 8 ? w : __builtin_bswap64(w);  // the loop built little-endian
}

class InnerTree {
 public:
  static constexpr std::uint64_t kWriting = 1, kObsolete = 2, kVersionStep = 4;

  struct Node {
    Node(bool leaf, std::uint32_t cap);
    std::atomic<std::uint64_t> version{0};  //!< bit 0 a writer is inside, bit 1 obsolete
    const bool leaf_level;                  //!< children are pool leaf offsets
    const std::uint32_t cap;                //!< children it can hold (fanout + 1)
    std::atomic<std::uint32_t> n{0};        //!< children
    //! count() - 1 separators, ascending (immutable strings, owned by this slot)
    std::unique_ptr<std::atomic<const std::string*>[]> keys;
    //! first 8 bytes of each key, big-endian, zero-padded: the binary search compares
    //! these and the strings only on a tie
    std::unique_ptr<std::atomic<std::uint64_t>[]> heads;
    //! leaf_level: leaf offsets; otherwise Node*
    std::unique_ptr<std::atomic<std::uint64_t>[]> kids;

    std::size_t count() const noexcept { return n.load(std::memory_order_relaxed); }
    std::uint64_t leaf(std::size_t i) const noexcept {
      return kids[i].load(std::memory_order_acquire);
    }
    Node* kid(std::size_t i) const noexcept { return reinterpret_cast<Node*>(leaf(i)); }
    const std::string& key(std::size_t i) const noexcept {
      return *keys[i].load(std::memory_order_acquire);
    }
  };
  //! Root-to-leaf positions: (node, child index) per level, root first.
  using Path = std::vector<std::pair<Node*, std::size_t>>;
  //! Called with a node (tag 1) or a separator (tag 2) pointer, or'ed with its tag, that
  //! a writer took out of the tree.
  using RetireFn = void (*)(void* ctx, std::uint64_t tagged);
  static constexpr std::uint64_t kTagNode = 1, kTagSep = 2;
  //! Frees a tagged pointer given to RetireFn.
  static void free_tagged(std::uint64_t tagged) noexcept;

  explicit InnerTree(std::uint32_t fanout) noexcept : fanout_(fanout) {}
  ~InnerTree();
  InnerTree(const InnerTree&) = delete;
  InnerTree& operator=(const InnerTree&) = delete;

  void set_retire(RetireFn fn, void* ctx) noexcept {
    retire_ = fn;
    retire_ctx_ = ctx;
  }

  bool empty() const noexcept { return root_.load(std::memory_order_acquire) == nullptr; }
  //! Levels of inner nodes (0 for an empty tree).
  std::uint32_t height() const noexcept { return height_.load(std::memory_order_relaxed); }
  std::uint32_t fanout() const noexcept { return fanout_; }

  //! Replaces the tree by one over `leaves` (offset, smallest key), in list order. Not
  //! concurrent (open).
  void build(std::vector<std::pair<std::uint64_t, std::string>> leaves);
  //! Makes a tree of one leaf (the tree was empty; structure lock held).
  void reset_to(std::uint64_t leaf);

  //! Optimistic descent for `k`: the leaf, and the leaf-level node and its version, which
  //! the caller validates after it has read the leaf's own version (lock coupling into the
  //! leaf). Returns false if the tree is empty. Restarts internally on a failed validation.
  //! Inline (below): it is most of a lookup.
  bool find_optimistic(Key k, std::uint64_t* leaf, const Node** node, std::uint64_t* v) const;
  //! Child index of n whose range holds k (kh = key_head(k)): the number of separators
  //! <= k. Safe on a node a writer is changing (the reader validates afterwards): the count
  //! is clamped to the capacity and a separator slot not written yet (null) ends the search.
  static std::size_t route(const Node& n, Key k, std::uint64_t kh) noexcept;
  //! The version of n once no writer is inside it; false if n is obsolete (out of the tree).
  static bool read_version(const Node* n, std::uint64_t* v) noexcept;
  //! read_version when n is obsolete or a writer is inside it: spins, announced to a tracer.
  //! (Out of line, in fptree_inner.cc: the inlined fast path is one load and one test.)
  [[gnu::cold, gnu::noinline]] static bool read_version_slow(const Node* n,
                                                             std::uint64_t* v) noexcept;
  //! True if n still has version v (after an acquire fence: the reads before it are done).
  static bool validate(const Node* n, std::uint64_t v) noexcept {
    seq_acquire_fence();
    return n->version.load(std::memory_order_relaxed) == v;
  }

  //! Writers holding the structure lock (or single-threaded): plain descent.
  //! The leaf whose range holds `k` (precondition: !empty()), with the path to it.
  std::uint64_t find(Key k, Path* path) const;
  //! The leaf before the one `path` ends at, or 0 if it is the first.
  std::uint64_t previous_leaf(const Path& path) const noexcept;
  //! Adds `right` after the leaf `path` ends at, separated by `sep` (a split).
  void insert_after(const Path& path, std::string sep, std::uint64_t right);
  //! Removes the leaf `path` ends at (an unlinked leaf).
  void erase(const Path& path);

  //! Calls f(leaf, lo, hi) for every leaf in order with its bounds (nullptr = unbounded).
  //! Fails with corrupt if a node is empty, overfull, unsorted, or leaves sit at
  //! different depths. Quiescent tree only.
  Result<void> for_each_leaf(
      const std::function<void(std::uint64_t, const std::string*, const std::string*)>& f) const;

  std::uint64_t node_count() const noexcept;
  //! DRAM the nodes hold: node objects, their arrays, separator strings.
  std::uint64_t dram_bytes() const noexcept;

 private:
  //! route's rare case: separators from `lo` share k's head; their strings decide.
  [[gnu::noinline]] static std::size_t route_ties(const Node& n, std::size_t lo,
                                                  std::size_t seps, Key k,
                                                  std::uint64_t kh) noexcept;
  Node* new_node(bool leaf) const { return new Node(leaf, fanout_ + 1); }
  static void begin_write(Node* n) noexcept;
  static void end_write(Node* n) noexcept;
  //! Marks n obsolete (readers restart) and retires it; n is out of the tree.
  void retire_node(Node* n) noexcept;
  void retire_sep(const std::string* s) noexcept;
  static void set_key(Node* n, std::size_t i, const std::string* s) noexcept;
  static void destroy(Node* n) noexcept;
  void split_up(Path path);
  void erase_at(Path& path);

  std::atomic<Node*> root_{nullptr};
  std::atomic<std::uint32_t> height_{0};
  std::uint32_t fanout_;
  RetireFn retire_ = nullptr;
  void* retire_ctx_ = nullptr;
};

// Branch-free lower bound over the heads (the number of separators whose head is below
// kh: each of those is below k), then the separators whose head equals kh, if any, by
// their strings (route_ties). Heads ascend (key_head is monotone in key order); a torn
// read while a writer shifts them only yields another index below the count.
inline std::size_t InnerTree::route(const Node& n, Key k, std::uint64_t kh) noexcept {
  std::size_t cnt = n.count();
  if (cnt > n.cap) cnt = n.cap;
  if (cnt <= 1) return 0;
  const std::size_t seps = cnt - 1;
  const std::atomic<std::uint64_t>* heads = n.heads.get();
  std::size_t base = 0, len = seps;
  while (len > 1) {
    const std::size_t half = len / 2;
    base = heads[base + half].load(std::memory_order_relaxed) < kh ? base + half : base;
    len -= half;
  }
  const std::uint64_t h = heads[base].load(std::memory_order_relaxed);
  const std::size_t lo = base + (h < kh ? 1 : 0);
  if (lo == seps || heads[lo].load(std::memory_order_relaxed) != kh) [[likely]]
    return lo;
  return route_ties(n, lo, seps, k, kh);
}

inline bool InnerTree::read_version(const Node* n, std::uint64_t* v) noexcept {
  const std::uint64_t x = n->version.load(std::memory_order_acquire);
  if ((x & (kObsolete | kWriting)) == 0) [[likely]] {
    *v = x;
    return true;
  }
  return read_version_slow(n, v);
}


inline bool InnerTree::find_optimistic(Key k, std::uint64_t* leaf, const Node** node,
                                       std::uint64_t* v) const {
  const std::uint64_t kh = key_head(k);
restart:
  const Node* n = root_.load(std::memory_order_acquire);
  if (n == nullptr) return false;
  std::uint64_t nv;
  // A root that was replaced (grown or collapsed) is rewritten before the swap: check the
  // root pointer after the version (optimistic lock coupling's root check).
  if (!read_version(n, &nv) || root_.load(std::memory_order_acquire) != n) goto restart;
  for (;;) {
    const std::size_t i = route(*n, k, kh);
    const std::uint64_t c = n->kids[i].load(std::memory_order_acquire);
    if (n->leaf_level) {
      *leaf = c;
      *node = n;
      *v = nv;
      return true;
    }
    if (!validate(n, nv)) goto restart;  // c is a child of n as n was at nv
    const Node* ch = reinterpret_cast<const Node*>(c);
    std::uint64_t cv;
    if (!read_version(ch, &cv) || !validate(n, nv)) goto restart;
    n = ch;
    nv = cv;
  }
}

}  // namespace wort::fptree_index
