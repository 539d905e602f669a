#include "index/fptree/fptree_tree.h"

#include <algorithm>
#include <chrono>

#include "index/common/anchor.h"
#include "index/fptree/fptree_hash.h"
#include "index/fptree/fptree_walk.h"
#include "index/registry.h"

namespace wort {

using namespace fptree_index;

namespace {

std::uint64_t option_or(std::uint64_t v, std::uint64_t dflt) { return v == 0 ? dflt : v; }

Result<void> check_options(std::uint64_t cap, std::uint64_t fanout, std::uint64_t hash,
                           Status code) {
  if (cap < kMinLeafCapacity || cap > kMaxLeafCapacity)
    return Error{code, "fptree: leaf capacity " + std::to_string(cap) + " not in [2, 64]"};
  if (fanout < kMinInnerFanout || fanout > kMaxInnerFanout)
    return Error{code, "fptree: inner fanout " + std::to_string(fanout) + " not in [3, 65536]"};
  if (hash > static_cast<std::uint64_t>(HashKind::constant))
    return Error{code, "fptree: unknown fingerprint hash " + std::to_string(hash)};
  return {};
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

FPTree::FPTree(Pool& pool, Anchor* anchor)
    : pool_(pool),
      anchor_(anchor),
      geo_(LeafGeometry::of(anchor->leaf_capacity)),
      hash_(static_cast<HashKind>(anchor->hash_kind)),
      inner_(anchor->inner_fanout) {}

std::uint8_t FPTree::fp_of(Key k) const noexcept { return fingerprint(k, hash_); }

Result<std::unique_ptr<FPTree>> FPTree::create(Pool& pool, const IndexOptions& opts) {
  Anchor image{};
  image.magic = kAnchorMagic;
  image.leaf_capacity = static_cast<std::uint32_t>(option_or(opts.words[0], kDefaultLeafCapacity));
  image.inner_fanout = static_cast<std::uint32_t>(option_or(opts.words[1], kDefaultInnerFanout));
  image.hash_kind = opts.words[2];
  if (auto r = check_options(option_or(opts.words[0], kDefaultLeafCapacity),
                             option_or(opts.words[1], kDefaultInnerFanout), opts.words[2],
                             Status::invalid_argument);
      !r)
    return r.error();
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) return anchor.error();
  return std::unique_ptr<FPTree>(new FPTree(pool, *anchor));
}

// Alg. 9: the checked walk (and the allocator's trace), the micro-log, the inner nodes.
// In a pool whose values name blocks (the server's items), kit::recover also traces every
// value through scan(), which needs the inner nodes and a finished split: there the checked
// walk runs alone first (nothing unchecked is read), then the replay and the rebuild, and
// the trace last. Everywhere else the trace is the checked walk (one pass, not two).
Result<std::unique_ptr<FPTree>> FPTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  Anchor* a = *opened;
  if (auto r = check_options(a->leaf_capacity, a->inner_fanout, a->hash_kind, Status::corrupt); !r)
    return r.error();
  std::unique_ptr<FPTree> tree(new FPTree(pool, a));
  const bool trace_values = pool.values_are_blocks();
  auto t0 = std::chrono::steady_clock::now();
  if (auto r = trace_values ? tree->visit_blocks([](std::uint64_t) {}) : kit::recover(pool, *tree); !r)
    return r.error();
  tree->open_times_.trace_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  if (auto r = tree->replay_split_log(); !r) return r.error();
  tree->open_times_.replay_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  if (auto r = tree->rebuild_inner(); !r) return r.error();
  tree->open_times_.rebuild_ms = ms_since(t0);
  if (trace_values) {
    t0 = std::chrono::steady_clock::now();
    if (auto r = kit::recover(pool, *tree); !r) return r.error();
    tree->open_times_.trace_ms += ms_since(t0);
  }
  return tree;
}

Status FPTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status FPTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status FPTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

// Alg. 1 without the concurrency: route through DRAM, filter by fingerprint, compare keys.
std::optional<Value> FPTree::lookup(Key k) const {
  if (inner_.empty()) return std::nullopt;
  const LeafRef l = leaf(inner_.find(k));
  const int s = l.find(k, fp_of(k));
  if (s == kNoSlot) return std::nullopt;
  return l.slot(s)->value;
}

std::vector<int> FPTree::sorted_slots(LeafRef l) const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(l.count()));
  for (std::uint64_t m = l.bitmap(); m != 0; m &= m - 1) out.push_back(std::countr_zero(m));
  std::sort(out.begin(), out.end(),
            [&](int a, int b) { return compare_keys(l.key(a), l.key(b)) < 0; });
  return out;
}

// Leaves are unsorted: each leaf's live slots are sorted before they are reported.
std::size_t FPTree::range(Key lo, Key hi, Visitor v) const {
  if (inner_.empty()) return 0;
  std::size_t n = 0;
  for (std::uint64_t off = inner_.find(lo); off != 0;) {
    const LeafRef l = leaf(off);
    for (int s : sorted_slots(l)) {
      const Key k = l.key(s);
      if (compare_keys(k, lo) < 0) continue;
      if (compare_keys(k, hi) >= 0) return n;
      ++n;
      if (!v(k, l.slot(s)->value)) return n;
    }
    off = l.next();
  }
  return n;
}

std::size_t FPTree::scan(Key from, std::size_t max, Visitor v) const {
  if (inner_.empty() || max == 0) return 0;
  std::size_t n = 0;
  for (std::uint64_t off = inner_.find(from); off != 0;) {
    const LeafRef l = leaf(off);
    for (int s : sorted_slots(l)) {
      const Key k = l.key(s);
      if (compare_keys(k, from) < 0) continue;
      ++n;
      if (!v(k, l.slot(s)->value) || n == max) return n;
    }
    off = l.next();
  }
  return n;
}

Result<void> FPTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  return walk_leaves(pool_, anchor_, geo_, v, [](std::uint64_t, std::uint64_t) {});
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::FPTree);
