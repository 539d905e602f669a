// index/wbtree/wbtree_walk.h — the checked walk over every wB+Tree block (kit::CheckedWalk),
// aware of the split micro-log: the trace, verify(), stats() and dump() go through it.
//
// Checked before a reader may trust them: each node block (aligned, carved, reached once),
// its capacity (4..63, the anchor's for its kind), its level (one below its parent's), its
// bitmap (no entry past the capacity), a valid slot array (count = valid entries, positions
// distinct, valid, inside the node), each key form (inline keys zero-padded; a key block
// carved, length 9..kMaxKeyLength, bytes inside the block, prefix equal to the entry's):
// comparisons, and so the sorts of readers, rely on one form per key.
//
// While log.sibling names S (a split past step 2), S is walked first and N's entries that S
// also holds (same prefix and meta) are not followed again, so every block is reached once
// in every crash state; the log's N and P must be in the tree, P N's parent with S or room.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "index/kit/checked_walk.h"
#include "index/wbtree/wbtree_key.h"
#include "index/wbtree/wbtree_layout.h"
#include "wort/key.h"
#include "wort/pool.h"

namespace wort::wbtree {

inline constexpr std::uint32_t kMaxLevels = 63;

//! The state of one walk_tree: the checked walk and what it learns of the split micro-log.
template <class OnNode, class OnKey>
class TreeWalk {
 public:
  TreeWalk(const Pool& pool, const Anchor& a, OnNode& on_node, OnKey& on_key)
      : pool_(pool), a_(a), log_(a.log), in_split_(log_.sibling != 0),
        w_(pool, "wbtree", (kMaxLevels + 2) << 8),  // pushes carry depth << 8 | level
        on_node_(on_node), on_key_(on_key) {}

  //! S first (while the log names one), then the tree from the root; then the log checked.
  Result<void> run() {
    if (in_split_) {
      walking_s_ = true;
      if (auto r = run_from(log_.sibling); !r) return r;
    }
    if (auto r = run_from(a_.root); !r) return r;
    if (in_split_ && !log_matches())
      return Error{Status::corrupt, "wbtree: the split micro-log does not match the tree"};
    return {};
  }

 private:
  // One checked run from `root`: the first expansion is its root (any level); S's children
  // are ordinary nodes.
  Result<void> run_from(std::uint64_t root) {
    bool first = true;
    return w_.run(root, [&](std::uint64_t off, std::uint32_t dl) {
      expand(off, first ? 0xff : dl);
      first = walking_s_ = false;
    });
  }

  bool fail(std::uint64_t off, const std::string& what) {
    return w_.fail("node at " + kit::CheckedWalk::hex(off) + " " + what);
  }

  // The node at off: entered, its level (`want`, 0xff: any), capacity and extent checked;
  // nullptr once the walk has failed.
  const Node* enter_node(std::uint64_t off, std::uint32_t want) {
    if (!w_.enter(off, sizeof(Node), 64, "node")) return nullptr;
    const Node* n = pool_.at<Node>(off);
    if (n->level > kMaxLevels) {
      fail(off, "has level " + std::to_string(n->level));
    } else if (want != 0xff && n->level != want) {
      fail(off, "has level " + std::to_string(n->level) + ", its parent wants " +
                    std::to_string(want));
    } else if (n->capacity != (n->level == 0 ? a_.leaf_capacity : a_.inner_capacity)) {
      fail(off, "has capacity " + std::to_string(n->capacity));
    } else if (w_.fits(off, off, node_bytes(n->capacity), "node entries")) {
      return n;
    }
    return nullptr;
  }

  // n's bitmap names no entry past its capacity, and a valid slot array (count = valid
  // entries, positions distinct, valid, inside the node).
  bool check_bitmap(std::uint64_t off, const Node* n, std::uint64_t bits) {
    const std::uint32_t cap = n->capacity;
    if (cap < 64 && (bits >> cap) != 0) return fail(off, "bitmap names entries past its capacity");
    if (!(n->bitmap & kSlotsValid)) return true;
    const unsigned cnt = n->slot[0];
    if (cnt != static_cast<unsigned>(__builtin_popcountll(bits)))
      return fail(off, "slot count disagrees with its bitmap");
    std::uint64_t seen = 0;
    for (unsigned i = 1; i <= cnt; ++i) {
      const unsigned p = n->slot[i];
      if (p >= cap || !(bits >> p & 1) || (seen >> p & 1))
        return fail(off, "slot array names a bad entry");
      seen |= 1ull << p;
    }
    return true;
  }

  // Records the levels (and P's room) of the nodes the log names.
  void note_log_nodes(std::uint64_t off, const Node* n, std::uint64_t bits) {
    if (walking_s_) s_level_ = n->level;
    if (in_split_ && off == log_.node) n_level_ = n->level;
    if (in_split_ && off == log_.parent) {
      p_level_ = n->level;
      p_has_room_ = __builtin_popcountll(bits) < static_cast<int>(n->capacity);
    }
  }

  // True if S (walked first) holds e too: N's copy is not followed again.
  bool moved_to_s(const Entry& e) const {
    bool m = false;
    for (const auto& [pr, me] : moved_) m |= pr == e.prefix && me == e.meta;
    return m;
  }

  // e's key form: an inline key zero-padded (comparisons rely on one form per key), or a
  // carved key block of length 9..kMaxKeyLength, its bytes inside the block, its prefix e's.
  bool check_key(std::uint64_t off, const Entry& e) {
    if (e.meta <= kMaxInline) {
      if (e.meta < 8 && (e.prefix << (8 * e.meta)) != 0)
        return fail(off, "has an inline key that is not zero-padded");
      return true;
    }
    if (!w_.enter(e.meta, sizeof(KeyBlock), 16, "key block")) return false;
    const auto* kb = pool_.at<KeyBlock>(e.meta);
    const std::uint64_t len = kb->len;
    if (len <= kMaxInline || len > kMaxKeyLength)
      return w_.fail("key block at " + kit::CheckedWalk::hex(e.meta) + " has length " +
                     std::to_string(len));
    if (!w_.fits(e.meta, e.meta, sizeof(KeyBlock) + len, "key bytes")) return false;
    if (key_prefix({reinterpret_cast<const std::byte*>(kb + 1), len}) != e.prefix)
      return fail(off, "has an entry whose prefix disagrees with its key block");
    on_key_(e.meta);
    return true;
  }

  // An inner node's entry e: its child pushed one level down, unless it is S (walked first).
  void follow(std::uint64_t off, const Node* n, const Entry& e, std::uint32_t depth) {
    if (in_split_ && off == log_.parent && e.value == log_.node) p_has_n_ = true;
    if (in_split_ && e.value == log_.sibling) {
      p_has_s_ |= off == log_.parent;
      return;
    }
    w_.push(e.value, ((depth + 1) << 8) | (n->level - 1));
  }

  void expand(std::uint64_t off, std::uint32_t depth_and_level) {
    const std::uint32_t depth = depth_and_level >> 8;
    const Node* n = enter_node(off, depth_and_level & 0xff);
    if (n == nullptr) return;
    const std::uint64_t bits = n->bitmap & ~kSlotsValid;
    if (!check_bitmap(off, n, bits)) return;
    note_log_nodes(off, n, bits);
    on_node_(off, *n, depth);
    const bool skip_moved = in_split_ && off == log_.node && !walking_s_;
    for (std::uint64_t b = bits; b; b &= b - 1) {
      const Entry& e = n->entries()[__builtin_ctzll(b)];
      if (walking_s_) moved_.emplace_back(e.prefix, e.meta);
      if (skip_moved && moved_to_s(e)) continue;
      if (!check_key(off, e)) return;
      if (n->level != 0) follow(off, n, e, depth);
    }
  }

  // N and P in the tree, P N's parent, S N's level, P with S or with room for it.
  bool log_matches() const {
    return n_level_ >= 0 && p_level_ >= 0 && p_has_n_ && s_level_ == n_level_ &&
           p_level_ == n_level_ + 1 && (p_has_s_ || p_has_room_);
  }

  const Pool& pool_;
  const Anchor& a_;
  const MicroLog log_;
  const bool in_split_;
  kit::CheckedWalk w_;
  OnNode& on_node_;
  OnKey& on_key_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> moved_;  // key forms S holds
  std::int64_t n_level_ = -1, p_level_ = -1, s_level_ = -1;
  bool p_has_n_ = false, p_has_s_ = false, p_has_room_ = false;
  bool walking_s_ = false;
};

//! on_node(offset, node, depth) for every node (depth 0 = the root), parents first;
//! on_key(offset) for every key block.
template <class OnNode, class OnKey>
Result<void> walk_tree(const Pool& pool, const Anchor& a, OnNode&& on_node, OnKey&& on_key) {
  return TreeWalk<std::remove_reference_t<OnNode>, std::remove_reference_t<OnKey>>(
             pool, a, on_node, on_key)
      .run();
}

}  // namespace wort::wbtree
