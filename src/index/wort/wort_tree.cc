#include "index/wort/wort_tree.h"

#include <bit>
#include <cstring>

#include "index/kit/anchor.h"
#include "index/kit/hot_load.h"
#include "index/registry.h"
#include "index/wort/wort_walk.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

WortTree::WortTree(Pool& pool, Anchor* anchor) noexcept
    : pool_(pool),
      anchor_(anchor),
      blocks_(pool.base()),
      gen_(pool.generation()),
      fresh_mark_(fresh_mark(gen_)) {}

Result<std::unique_ptr<WortTree>> WortTree::create(Pool& pool, const IndexOptions&) {
  Anchor image{};
  image.magic = kAnchorMagic;
  image.span_bits = kSpanBits;
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) return anchor.error();
  return std::unique_ptr<WortTree>(new WortTree(pool, *anchor));
}

Result<std::unique_ptr<WortTree>> WortTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  Anchor* anchor = *opened;
  // 4 or 8 is a pool of a build with the other WORT_SPAN_BITS (a usage error); any other
  // value no build writes (a damaged anchor).
  if (anchor->span_bits != 4 && anchor->span_bits != 8)
    return Error{Status::corrupt, "wort: the anchor's partial-key width is " +
                                      std::to_string(anchor->span_bits) + " bits (4 or 8)"};
  if (anchor->span_bits != kSpanBits)
    return Error{Status::invalid_argument,
                 "wort: tree built with " + std::to_string(anchor->span_bits) +
                     "-bit partial keys, this build uses " + std::to_string(kSpanBits)};
  std::unique_ptr<WortTree> tree(new WortTree(pool, anchor));
  // Checks every word a reader can follow; blocks allocated but not reachable (a crash
  // between allocation and commit, or between an unlink and its free) become free: nothing
  // leaks across a crash.
  if (auto r = kit::recover(pool, *tree); !r) return r.error();
  return tree;
}

namespace {

// True if the `n` bytes at a and b are equal: 8 at a time, inline (a call to memcmp costs
// more than comparing an 8-byte key).
inline bool bytes_equal(const std::byte* a, const std::byte* b, std::size_t n) noexcept {
  for (; n >= 8; n -= 8, a += 8, b += 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
  }
  for (; n != 0; --n, ++a, ++b)
    if (*a != *b) return false;
  return true;
}

// The branch position of a header word: depth + prefix_len (HeaderFields::branch()),
// without unpacking the prefix array.
inline std::size_t branch_of(std::uint64_t header) noexcept {
  return (header & kMaxDepth) + ((header >> kDepthBits) & ((1u << kPrefixLenBits) - 1));
}

//! The partial key at position i (< 64 / kSpanBits) of a key of at most 8 bytes held in a
//! word most significant byte first, zero padded (key_word).
inline unsigned partial_of_word(std::uint64_t key, std::size_t i) noexcept {
  return static_cast<unsigned>(key >> (64 - kSpanBits * (i + 1))) & (kFanout - 1);
}

//! v, through an empty asm: the compiler cannot replace it by a value it knows to be equal.
inline std::size_t hide_value(std::size_t v) noexcept {
  asm("" : "+r"(v));
  return v;
}

//! load(&n->child[i]) on the lookup's hot path: kit::hot_load (one mov, not an address add
//! and a load per level).
inline std::uint64_t load_child(const Node* n, std::size_t i) noexcept {
  return kit::hot_load(&n->child[i]);
}

//! The bytes of a key of at most 8 bytes, the first one most significant, zero padded.
inline std::uint64_t key_word(Key k) noexcept {
  if (k.size() == 8) [[likely]] return key_u64(k);  // the common case: no shift
  return k.empty() ? 0 : key_u64(k) << (64 - 8 * k.size());
}

//! True if the low 32 bits of n's header word are `e`: depth e, prefix length 0 (and a
//! zero first prefix partial key, which a header without prefix has), so the node branches
//! at e. One compare with the header in memory (a 4-byte read of the 8-byte word, which x86
//! never tears); under ThreadSanitizer, and off x86-64, the atomic load of the whole word.
inline bool branches_at(const Node* n, std::uint32_t e) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  bool ne;
  // The operand is the whole word (its address is that of its low half: little-endian).
  asm("cmpl %2, %1" : "=@ccne"(ne) : "m"(n->header), "ri"(e));
  return !ne;
#else
  return static_cast<std::uint32_t>(load(&n->header)) == e;
#endif
}

//! True if the leaf's key_len and fresh mark, one 8-byte word, equal `len` (and 0): its key
//! has that length and it is not fresh. One compare with the word in memory (the compare of
//! key_len the lookup made anyway, made 8 bytes wide), as branches_at.
inline bool len_is_not_fresh(const LeafHeader* l, std::uint64_t len) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  bool ne;
  using Word [[gnu::may_alias]] = std::uint64_t;
  asm("cmpq %2, %1"
      : "=@ccne"(ne)
      : "m"(*reinterpret_cast<const Word*>(&l->key_len)), "er"(len));
  return !ne;
#else
  return len_and_mark(l) == len;
#endif
}

//! Partial key i (a constant < 16 once unrolled) of the 8-byte key at p: one byte load and
//! a shift or a mask.
inline std::size_t nibble_at(const std::byte* p, std::size_t i) noexcept {
  const std::size_t byte = static_cast<std::size_t>(p[i / 2]);
  return i % 2 == 0 ? byte >> 4 : byte & 15u;
}

}  // namespace

// One unrolled level of lookup_8 (i a constant 0..15): stop at a leaf or an empty slot,
// else read the child at the key's partial key i and confirm that the node branches at i
// (no prefix), or take the slow path.
#define WORT_LOOKUP8_LEVEL(i)                                                      \
  level_##i : if (static_cast<std::int64_t>(r) <= 0) goto out;                     \
  n = reinterpret_cast<const Node*>(base + (r << 1));                              \
  {                                                                                \
    const std::uint64_t next = load_child(n, nibble_at(p, i));                     \
    if (!branches_at(n, i)) [[unlikely]] goto slow;                                \
    r = std::rotr(next, 1);                                                        \
  }

// 8-byte keys (the paper's integer keys): 16 partial keys, so a node reached at position e
// (its parent's branch position + 1) that has no compressed prefix branches at e. The 16
// levels are unrolled: level e reads the child at the key's partial key e and confirms with
// one compare of the header's low half against the constant e; the child word is carried
// rotated right by one bit, so that one signed test stops at a leaf (negative) or an empty
// slot (0) and a node's address is base + 2 x the word. A node with a prefix (or a header a
// concurrent SplitCmp or merge is rewriting: the branch position is the same in both) takes
// the slow path: its branch position from the whole header word, the child there, and a
// jump back into the unrolled levels at the position after it. What it returns is what
// lookup_reference() returns (the descent by branch positions as a plain loop); the unit
// tests compare the two.
WortTree::Found WortTree::lookup_8(Key k) const {
  // For 4-bit partial keys (16 per 8-byte key); lookup() calls it only in such a build.
  const std::byte* const p = k.data();
  {
  kit::EpochReclaimer::Pin pin(epochs_);
  const std::byte* const base = blocks_.base();
  std::uint64_t r = std::rotr(load(&anchor_->root), 1);
  const Node* n;
  std::uint64_t b;
  goto level_0;
  WORT_LOOKUP8_LEVEL(0) WORT_LOOKUP8_LEVEL(1) WORT_LOOKUP8_LEVEL(2) WORT_LOOKUP8_LEVEL(3)
  WORT_LOOKUP8_LEVEL(4) WORT_LOOKUP8_LEVEL(5) WORT_LOOKUP8_LEVEL(6) WORT_LOOKUP8_LEVEL(7)
  WORT_LOOKUP8_LEVEL(8) WORT_LOOKUP8_LEVEL(9) WORT_LOOKUP8_LEVEL(10) WORT_LOOKUP8_LEVEL(11)
  WORT_LOOKUP8_LEVEL(12) WORT_LOOKUP8_LEVEL(13) WORT_LOOKUP8_LEVEL(14) WORT_LOOKUP8_LEVEL(15)
level_16:
  // Position 16, past the key's last partial key: a node here branches at 16 or deeper.
  if (static_cast<std::int64_t>(r) <= 0) goto out;
  n = reinterpret_cast<const Node*>(base + (r << 1));
  b = branch_of(load(&n->header));
  goto at_end;
slow:
  b = branch_of(load(&n->header));
  if (b < 16) {
    r = std::rotr(load_child(n, nibble_at(p, b)), 1);
    switch (b) {  // on at the position after b
      case 0: goto level_1; case 1: goto level_2; case 2: goto level_3; case 3: goto level_4;
      case 4: goto level_5; case 5: goto level_6; case 6: goto level_7; case 7: goto level_8;
      case 8: goto level_9; case 9: goto level_10; case 10: goto level_11; case 11: goto level_12;
      case 12: goto level_13; case 13: goto level_14; case 14: goto level_15;
      default: goto level_16;
    }
  }
at_end:
  if (b != 16) return {0, 0};  // the key ends inside the node's prefix
  r = std::rotr(load(&n->end_child), 1);
  if (static_cast<std::int64_t>(r) > 0) return {0, 0};  // a node there: not a tree
out:
  if (r == 0) return {0, 0};
  {
    // r is a leaf word, rotated: its block is base + (word - kLeafTag).
    const std::uint64_t w = std::rotl(r, 1);
    const auto* l = reinterpret_cast<const LeafHeader*>(base + (w - kLeafTag));
    if (!len_is_not_fresh(l, 8)) [[unlikely]] {  // another length, or marked
      if (l->key_len != 8) return {0, 0};
      goto marked;
    }
    std::uint64_t x, y;
    std::memcpy(&x, l + 1, 8);
    std::memcpy(&y, p, 8);
    if (x != y) return {0, 0};
    return {1, load(&l->value)};
  }
  }  // unpinned: nothing is live across the call below (no register saved for it)
marked:
  const std::optional<Value> v = lookup_marked(Key{p, 8});
  return v ? Found{1, *v} : Found{0, 0};
}

#undef WORT_LOOKUP8_LEVEL

// Keys of fewer than 8 bytes (8-byte keys take lookup_8): the key lives in a register, and each
// node's child is read at the branch position the parent predicts (its own + 1: a node
// without a compressed prefix) while the node's header is read beside it to confirm. So the
// descent waits for one load per level — the child word — and not for header, branch
// position and key byte in turn; a node with a prefix costs a second read of its slot.
std::optional<Value> WortTree::lookup_short(Key k) const {
  {
  kit::EpochReclaimer::Pin pin(epochs_);
  const std::size_t count = Partial::count(k);
  const std::uint64_t key = key_word(k);
  const Blocks blocks = blocks_;
  std::uint64_t w = load(&anchor_->root);
  std::size_t expect = 0;  // the root node's depth; a node without prefix branches there
  std::uint64_t rest = key;  // the key's partial keys from position `expect` on, top bits first
  while (w != 0 && !is_leaf(w)) {
    const Node* n = blocks.node(w);
    std::uint64_t next =
        expect < count ? load_child(n, rest >> (64 - kSpanBits)) : load(&n->end_child);
    // The next prediction is made from this one before b is known (hidden from the compiler,
    // which would otherwise derive it from b, equal on this path, and so wait for the header).
    std::size_t following = hide_value(expect + 1);
    std::uint64_t rest_next = rest << kSpanBits;
    const std::size_t b = branch_of(load(&n->header));
    if (b != expect) [[unlikely]] {
      if (b > count) return std::nullopt;  // the key ends inside the node's prefix
      next = b < count ? load_child(n, partial_of_word(key, b)) : load(&n->end_child);
      following = b + 1;
      rest_next = following < count ? key << (kSpanBits * following) : 0;
    }
    w = next;
    expect = following;
    rest = rest_next;
  }
  // The leaf compare is spelled out here and in lookup_long(): one shared helper cost 1-2
  // instructions per lookup (callgrind, search-direct, 100k keys: 203/184/211 -> 205/185/213).
  if (w == 0) return std::nullopt;
  // w is a leaf word (the loop ended on one): its block is w - kLeafTag, one add with the
  // base instead of clearing the tag first.
  const auto* l = reinterpret_cast<const LeafHeader*>(blocks.base() + (w - kLeafTag));
  if (!len_is_not_fresh(l, k.size())) [[unlikely]] {  // another length, or marked
    if (l->key_len != k.size()) return std::nullopt;
    goto marked;
  }
  const auto* lk = reinterpret_cast<const std::byte*>(l + 1);
  if (k.size() == 8) {  // the paper's integer keys: one 8-byte compare, not the loop
    std::uint64_t x, y;
    std::memcpy(&x, lk, 8);
    std::memcpy(&y, k.data(), 8);
    if (x != y) return std::nullopt;
  } else if (!bytes_equal(lk, k.data(), k.size())) {
    return std::nullopt;
  }
  return load(&l->value);
  }
marked:
  return lookup_marked(k);
}

// Optimistic: the stored prefix partial keys are skipped, not compared; only the branch
// position (which SplitCmp, the remove-merge and RecoverHeader all keep, so an interrupted
// one does not disturb it) picks the child. The whole key is compared once at the leaf,
// which decides: a key that left the tree's path inside a skipped prefix reaches another
// key's leaf, or an empty slot, and gets nullopt.
//
// Lock-free: pinned (a node or leaf unlinked meanwhile is not freed under it), each child
// word, header and value read with one atomic load. A header a concurrent SplitCmp or merge
// is rewriting still names the same branch position, the only field used here.
[[gnu::always_inline]] inline std::uint64_t WortTree::leaf_by_branches(Key k) const {
  const std::size_t count = Partial::count(k);
  std::uint64_t w = load(&anchor_->root);
  while (w != 0 && !is_leaf(w)) {
    const Node* n = blocks_.node(w);
    const std::size_t b = branch_of(load(&n->header));
    if (b < count) {
      w = load(&n->child[Partial::at(k, b)]);
    } else {
      if (b != count) return 0;  // the key ends inside the node's prefix
      w = load(&n->end_child);
    }
  }
  return w;
}

// Keys of more than 8 bytes, and lookup_reference() for any key.
std::optional<Value> WortTree::lookup_long(Key k) const {
  {
  kit::EpochReclaimer::Pin pin(epochs_);
  const std::uint64_t w = leaf_by_branches(k);
  if (w == 0) return std::nullopt;
  const LeafHeader* l = blocks_.leaf(w);
  if (!len_is_not_fresh(l, k.size())) [[unlikely]] {  // another length, or marked
    if (l->key_len != k.size()) return std::nullopt;
    goto marked;
  }
  if (!bytes_equal(reinterpret_cast<const std::byte*>(l + 1), k.data(), k.size()))
    return std::nullopt;
  return load(&l->value);
  }
marked:
  return lookup_marked(k);
}

// A lookup whose leaf compare met a marked leaf of the key's length (rare: the window
// between an insert's commit store and its fence, or a mark an earlier session left), out
// of line and after the fast path unpinned, so that path keeps nothing live across a call:
// the lookup again, pinned, by branch positions (as lookup_long); at a leaf of k with a mark,
// help_fresh before its value is returned.
std::optional<Value> WortTree::lookup_marked(Key k) const {
  kit::EpochReclaimer::Pin pin(epochs_);
  const std::uint64_t w = leaf_by_branches(k);
  if (w == 0) return std::nullopt;
  const LeafHeader* l = blocks_.leaf(w);
  if (l->key_len != k.size() ||
      !bytes_equal(reinterpret_cast<const std::byte*>(l + 1), k.data(), k.size()))
    return std::nullopt;
  if (mark_of(l) != 0) help_fresh(l);
  return load(&l->value);
}

// The insert that published l may not be durable: its publishing store is the word of l's
// slot (an insert into an empty slot) or of the slot above it (a leaf split's node, a
// SplitCmp's parent). While l is fresh neither can change: the inserting writer holds the
// lock of l's slot's owner (its own new node, born locked) and of the node holding that slot
// (when it published a new node there) until after its commit's fence. So a descent by l's
// key (branch positions only, as lookup_long) reaches l through both; writing them back and
// fencing makes the commit durable. If the writer has finished meanwhile and l has moved or
// gone, its commit was durable before it cleared the mark (after its fence): the write-backs
// are then harmless. Then the mark is cleared (volatile, as the writer does).
void WortTree::help_fresh(const LeafHeader* l) const {
  if (WORT_FAULT(g_broken_reader_ignores_fresh)) [[unlikely]] return;
  if (mark_of(l) != fresh_mark_) {  // an earlier session's mark (or cleared meanwhile)
    clear_fresh(const_cast<LeafHeader*>(l));
    return;
  }
  const Key k = leaf_key(l);
  const std::size_t count = Partial::count(k);
  std::uint64_t* above = nullptr;
  std::uint64_t* slot = &anchor_->root;
  for (std::uint64_t w = load(slot); w != 0 && !is_leaf(w); w = load(slot)) {
    Node* n = blocks_.node(w);
    const std::size_t b = branch_of(load(&n->header));
    if (b > count) break;  // not l's path any more (l moved: its commit is durable)
    above = slot;
    slot = b < count ? &n->child[Partial::at(k, b)] : &n->end_child;
  }
  pm::flush(slot, sizeof *slot);
  if (above != nullptr && (reinterpret_cast<std::uintptr_t>(above) / pm::kCacheLine !=
                           reinterpret_cast<std::uintptr_t>(slot) / pm::kCacheLine))
    pm::flush(above, sizeof *above);
  pm::fence();
  clear_fresh(const_cast<LeafHeader*>(l));
}

Result<void> WortTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  if (auto r = walk_preorder(pool_, blocks_, anchor_->root,
                             [&](std::uint64_t w, std::uint32_t) { v(block_of(w)); });
      !r)
    return r;
  epochs_.for_each_retired(v);  // unlinked, not yet freed: still the tree's (epoch.h)
  return {};
}

IndexStats WortTree::stats() const {
  IndexStats s;
  std::uint64_t depth_sum = 0, nodes = 0;
  const pm::Allocator& a = pool_.allocator();
  s.pm_bytes = a.block_size(pool_.offset_of(anchor_));
  // On a damaged tree the figures cover what the checked walk reached before the bad word.
  (void)walk_preorder(pool_, blocks_, anchor_->root, [&](std::uint64_t w, std::uint32_t level) {
    s.pm_bytes += a.block_size(block_of(w));
    if (is_leaf(w)) {
      // Leaf depth = inner nodes on the path from the root (a lone root leaf has depth 0).
      ++s.keys;
      depth_sum += level;
      if (level > s.max_leaf_depth) s.max_leaf_depth = level;
    } else {
      ++nodes;
    }
  });
  s.avg_leaf_depth = s.keys ? static_cast<double>(depth_sum) / static_cast<double>(s.keys) : 0;
  s.nodes["node" + std::to_string(kFanout)] = nodes;
  s.nodes["leaf"] = s.keys;
  return s;
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::WortTree);
