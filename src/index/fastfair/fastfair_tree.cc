// FAST&FAIR: create, open, and the readers (lookup, scan, range). Readers never write and
// take no lock (§5): they pin the epoch, read each node in the direction of its switch
// counter with one atomic load per word and read it again when the counter changed
// (fastfair_node.h), skip a dead slot, follow a sibling whose first key is <= the search
// key (Algorithm 3), and a scan skips keys it has already passed (an uncut split's copies,
// a record read twice while it moved).

#include "index/fastfair/fastfair_tree.h"

#include <cstring>
#include <vector>

#include "index/kit/anchor.h"
#include "index/registry.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace fastfair;

FastFairTree::FastFairTree(Pool& pool, Anchor* anchor) noexcept
    : pool_(pool),
      anchor_(anchor),
      base_(pool.base()),
      node_size_(anchor->node_size),
      slots_(slots_for(anchor->node_size)),
      kr_(pool.base()),
      gen_(pool.generation()) {
  held_.reserve(16);
}

namespace {
bool valid_node_size(std::uint64_t s) {
  return s % 64 == 0 && s >= kMinNodeSize && s <= kMaxNodeSize;
}
}  // namespace

Result<std::unique_ptr<FastFairTree>> FastFairTree::create(Pool& pool, const IndexOptions& opts) {
  const std::uint64_t size = opts.words[0] ? opts.words[0] : kDefaultNodeSize;
  if (!valid_node_size(size))
    return Error{Status::invalid_argument,
                 "fastfair: node size " + std::to_string(size) +
                     " (options word 0) must be a multiple of 64 in [256, 4096]"};
  if (auto r = kit::check_kind(pool, kKind); !r) return r.error();
  if (pool.root() != 0) return Error{Status::invalid_argument, "pool already holds an index"};
  // The root leaf first, written back; create_anchor's publish fences it before the pool
  // root names the anchor (Jaaru / FAST_FAIR issue #13: the authors' constructor flushed
  // neither the root node nor the tree object).
  std::uint64_t leaf = 0;
  if (Status s = pool.allocator().allocate(size, &leaf); s != Status::ok)
    return Error{s, "fastfair: no space for the root leaf"};
  Node* n = reinterpret_cast<Node*>(pool.base() + leaf);
  NodeHeader h{};
  h.tag = kNodeTag;
  h.slots = static_cast<std::uint16_t>(slots_for(size));
  pm::copy(&n->h, &h, sizeof h);
  pm::fill(n->rec, 0xFF, size - sizeof h);  // every key word kEmpty
  pm::flush(n, size);
  Anchor image{};
  image.magic = kAnchorMagic;
  image.root = leaf;
  image.node_size = size;
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) {
    pool.allocator().free(leaf);
    return anchor.error();
  }
  return std::unique_ptr<FastFairTree>(new FastFairTree(pool, *anchor));
}

Result<std::unique_ptr<FastFairTree>> FastFairTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  Anchor* anchor = *opened;
  if (!valid_node_size(anchor->node_size))
    return Error{Status::corrupt,
                 "fastfair: anchor names node size " + std::to_string(anchor->node_size)};
  std::unique_ptr<FastFairTree> tree(new FastFairTree(pool, anchor));
  // The checked walk over every node and key block (a damaged pool stops here); blocks a
  // crash left unreachable become free. No other repair: writers do that lazily.
  if (auto r = kit::recover(pool, *tree); !r) return r.error();
  return tree;
}

unsigned FastFairTree::height() const noexcept { return node(anchor_->root)->h.level; }

// Readers and writers alike: one atomic load of the sibling word and of its first key (a
// writer, under the lock, reads what only it changes; the loads cost it nothing).
std::uint64_t FastFairTree::sibling_to_follow(NodeRef nr, const SearchKey& s) const {
  const std::uint64_t sib = ld(&nr.n->h.sibling);
  if (sib == 0) return 0;
  const std::uint64_t first = ld(&node(sib)->rec[0].key);
  if (first == kEmpty || kr_.compare(s, first) < 0) return 0;
  return sib;
}

// The leaf where `s` is, or would be inserted: inner nodes route, or hand over to their
// sibling (only a key at or past a node's last key can belong to the sibling: an uncut
// split's node still holds the sibling's records itself).
std::uint64_t FastFairTree::leaf_for(const SearchKey& s) const {
  auto node_at = [this](std::uint64_t off) { return node(off); };
  std::uint64_t cur = ld(&anchor_->root);
  for (;;) {
    NodeRef nr = ref(cur);
    if (nr.leaf()) return cur;  // a node's level never changes
    const std::uint64_t before = ld(&nr.n->h.sibling);
    bool beyond = false;
    std::uint64_t after = 0;
    const std::uint64_t child = route_sync(nr.n, slots_, s, kr_, &beyond, NoProbe{}, &after);
    if (beyond) {
      if (std::uint64_t sib = sibling_for(before, after, s, kr_, node_at)) {
        cur = sib;
        continue;
      }
    }
    cur = child;
  }
}

std::optional<Value> FastFairTree::lookup(Key k) const {
  kit::EpochReclaimer::Pin pin(epochs_);
  const SearchKey s = SearchKey::of(k);
  auto node_at = [this](std::uint64_t off) { return node(off); };
  std::uint64_t cur = leaf_for(s);
  for (;;) {
    const Node* nd = node(cur);
    const std::uint64_t before = ld(&nd->h.sibling);
    std::uint64_t after = 0;
    const Found f = find_sync(nd, slots_, s, kr_, NoProbe{}, &after);
    if (f.at >= 0) return f.value;
    if (f.at == -1) return std::nullopt;
    cur = sibling_for(before, after, s, kr_, node_at);
    if (cur == 0) return std::nullopt;
  }
}

namespace {
//! A scan's visits: one record is visited unless it is below the start or at/below the last
//! key visited (a record read twice while it moved; an uncut split's copies of its
//! sibling's first keys).
struct ScanVisits {
  const KeyReader& kr;
  const SearchKey& s;
  Visitor v;
  std::size_t max;
  std::size_t n = 0;
  std::uint64_t last = kEmpty;  // the last key word passed to v
  bool stop = false;

  [[gnu::always_inline]] bool below_start(std::uint64_t k) const { return last == kEmpty && kr.compare(s, k) > 0; }
  [[gnu::always_inline]] void visit(std::uint64_t k, std::uint64_t val) {
    if (last == kEmpty ? kr.compare(s, k) > 0 : kr.compare_words(k, last) <= 0) return;
    std::byte scratch[8];
    ++n;
    last = k;
    if (!v(kr.bytes(k, scratch), val) || n == max) stop = true;
  }
};

//! Left to right, visiting as it reads: each record is visited only after the counter is
//! seen unchanged since the node's read began (`c`: so far the read is consistent). False:
//! the counter changed or a slot changed under the read; the node is read again and the keys
//! already visited are skipped.
[[gnu::always_inline]] inline bool scan_ltr(const Node* nd, unsigned slots, SwitchCount c,
                                            ScanVisits& sv) {
  std::uint64_t k = ld(&nd->rec[0].key);
  for (unsigned i = 0; i < slots && k != kEmpty && !sv.stop; ++i) {
    if (sv.below_start(k)) {  // below the start: key only
      k = i + 1 < slots ? ld(&nd->rec[i + 1].key) : kEmpty;
      continue;
    }
    const std::uint64_t val = ld(&nd->rec[i].ptr);
    // The next slot's key before the key's second load (detail::find_ltr says why).
    const std::uint64_t next = i + 1 < slots ? ld(&nd->rec[i + 1].key) : kEmpty;
    if (ld(&nd->rec[i].key) != k) return false;  // torn: the slot changed under the read
    if (next != k) {  // (equal: the dead left copy; the next slot is live)
      if (ld(&nd->h.switch_counter) != c) return false;
      sv.visit(k, val);
    }
    k = next;
  }
  return true;
}

//! One leaf of a scan, read consistently in the direction of its switch counter; *after:
//! its sibling word loaded before the read's last counter check (see sibling_for).
[[gnu::always_inline]] inline void scan_leaf(const Node* nd, unsigned slots, ScanVisits& sv,
                                             Record* recs, std::uint64_t* after) {
  for (;;) {
    const SwitchCount c = ld(&nd->h.switch_counter);
    if (c & 1u) {
      // Right to left: read the node into a buffer (one consistent view), then visit.
      const unsigned m = collect_sync(nd, slots, sv.last == kEmpty ? &sv.s : nullptr, sv.kr,
                                      recs, NoProbe{}, after);
      for (unsigned i = 0; i < m && !sv.stop; ++i) sv.visit(recs[i].key, recs[i].ptr);
      return;
    }
    if (!scan_ltr(nd, slots, c, sv)) continue;
    if (sv.stop) return;
    *after = ld(&nd->h.sibling);
    if (ld(&nd->h.switch_counter) == c) return;  // the node's end, consistently
  }
}
}  // namespace

std::size_t FastFairTree::scan(Key from, std::size_t max, Visitor v) const {
  if (max == 0) return 0;
  kit::EpochReclaimer::NestablePin pin(epochs_);  // the visitor may call back into the tree
  const SearchKey s = SearchKey::of(from);
  ScanVisits sv{kr_, s, v, max};
  Record recs[slots_for(kMaxNodeSize)];
  auto node_at = [this](std::uint64_t off) { return node(off); };
  // The sibling word loaded before a node's read and the one loaded after it, before the
  // read's last counter check (see sibling_for).
  std::uint64_t before = 0, after = 0;
  for (std::uint64_t cur = leaf_for(s); cur != 0;
       cur = next_for_scan(before, after, kr_, node_at)) {
    const Node* nd = node(cur);
    before = ld(&nd->h.sibling);
    scan_leaf(nd, slots_, sv, recs, &after);
    if (sv.stop) return sv.n;
  }
  return sv.n;
}

std::size_t FastFairTree::range(Key lo, Key hi, Visitor v) const {
  std::size_t n = 0;
  scan(lo, SIZE_MAX, [&](Key k, Value val) {
    if (compare_keys(k, hi) >= 0) return false;
    ++n;
    return v(k, val);
  });
  return n;
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::FastFairTree);
