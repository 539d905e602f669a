#include "index/fptree/fptree_tree.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "index/kit/anchor.h"
#include "index/kit/gen_lock.h"
#include "index/fptree/fptree_hash.h"
#include "index/fptree/fptree_walk.h"
#include "index/registry.h"

namespace wort {

using namespace fptree_index;

namespace {

std::uint64_t option_or(std::uint64_t v, std::uint64_t dflt) { return v == 0 ? dflt : v; }

Result<void> check_options(std::uint64_t cap, std::uint64_t fanout, std::uint64_t hash,
                           std::uint64_t group, Status code) {
  if (group > kMaxGroupLeaves)
    return Error{code, "fptree: leaves per group " + std::to_string(group) + " not in [0, " +
                           std::to_string(kMaxGroupLeaves) + "]"};
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
      groups_(pool, anchor, group_geometry(anchor, geo_)),
      inner_(anchor->inner_fanout),
      gen_(pool.generation()),
      stripes_(std::make_unique<std::atomic<std::uint64_t>[]>(std::size_t{1} << kStripeBits)) {
  inner_.set_retire(&retire_inner, this);
}

// --- concurrency ----------------------------------------------------------------------

void FPTree::free_retired(void* tree, std::uint64_t x) {
  auto* t = static_cast<FPTree*>(tree);
  if ((x & 3) != 0)
    InnerTree::free_tagged(x);  // a DRAM inner node or separator
  else if ((x & kTagGroupLeaf) != 0)
    t->groups_.free_leaf(x & ~kTagGroupLeaf);  // Alg. 12
  else
    t->pool_.allocator().free(x);  // a leaf or key block
}

Status FPTree::new_leaf(std::uint64_t* off) {
  if (groups_.enabled()) return groups_.get_leaf(off);  // Alg. 10
  return pool_.allocator().allocate(geo_.bytes, off);
}

void FPTree::retire_inner(void* tree, std::uint64_t tagged) {
  static_cast<FPTree*>(tree)->epochs_.retire(tagged);
}

// Seqlock writer side (Boehm): the count of writers inside goes up before any store a
// reader may see; the release fence orders it before them.
void FPTree::leaf_begin(std::uint64_t off) const noexcept {
  stripe(off).fetch_add(1, std::memory_order_relaxed);
  seq_release_fence();
}

void FPTree::leaf_end(std::uint64_t off) const noexcept {
  stripe(off).fetch_add(kSectionDone - 1, std::memory_order_release);
}

std::uint64_t FPTree::leaf_version_wait(std::uint64_t off) const noexcept {
  const std::atomic<std::uint64_t>& w = stripe(off);
  for (unsigned spins = 0;; ++spins) {
    const std::uint64_t v = w.load(std::memory_order_acquire);
    if ((v & kActiveMask) == 0 || skip_leaf_validation_) {
      if (spins == 0) [[likely]] return v;
      pm::after_wait(&w);  // reads on in its turn (crash simulator): read again, as a first look
      spins = ~0u;
      continue;
    }
    pm::waiting(&w);
    if (spins < 64)
      __builtin_ia32_pause();
    else
      std::this_thread::yield();  // the writer may be off its core (a flush and a fence)
  }
}

inline bool FPTree::reader_leaf(Key k, std::uint64_t* off, std::uint64_t* v) const {
  for (;;) {
    const InnerTree::Node* n;
    std::uint64_t nv;
    if (!inner_.find_optimistic(k, off, &n, &nv)) return false;
    *v = leaf_version(*off);
    if (InnerTree::validate(n, nv)) return true;
  }
}

bool FPTree::lock_leaf(Key k, std::uint64_t* off) {
  for (;;) {
    const InnerTree::Node* n;
    std::uint64_t nv;
    if (!inner_.find_optimistic(k, off, &n, &nv)) return false;
    if (!InnerTree::validate(n, nv)) continue;  // *off is a leaf of the tree as it was at nv
    // The caller is pinned: the leaf may be unlinked meanwhile (obsolete: gen_lock says
    // so), never freed.
    if (!kit::gen_lock(leaf(*off).lock_word(), gen_)) continue;
    // Still the leaf for k: a split of it finishes its parent update before it unlocks, an
    // unlink before it marks the leaf obsolete; either bumped n.
    if (InnerTree::validate(n, nv)) return true;
    kit::gen_unlock(leaf(*off).lock_word(), gen_);
  }
}

void FPTree::unlock_leaf(std::uint64_t off, bool obsolete) noexcept {
  kit::gen_unlock(leaf(off).lock_word(), gen_, obsolete);
}

std::uint8_t FPTree::fp_of(Key k) const noexcept { return fingerprint(k, hash_); }

Result<std::unique_ptr<FPTree>> FPTree::create(Pool& pool, const IndexOptions& opts) {
  AnchorBlock block;  // the anchor and its array of split logs (all clear)
  std::memset(static_cast<void*>(&block), 0, sizeof block);  // every byte, the union's too
  Anchor& image = block.anchor;
  image.magic = kAnchorMagic;
  image.log_count = kSplitLogs;
  image.leaf_capacity = static_cast<std::uint32_t>(option_or(opts.words[0], kDefaultLeafCapacity));
  image.inner_fanout = static_cast<std::uint32_t>(option_or(opts.words[1], kDefaultInnerFanout));
  image.hash_kind = opts.words[2];
  image.group_leaves = opts.words[3];
  if (auto r = check_options(option_or(opts.words[0], kDefaultLeafCapacity),
                             option_or(opts.words[1], kDefaultInnerFanout), opts.words[2],
                             opts.words[3], Status::invalid_argument);
      !r)
    return r.error();
  auto anchor = kit::create_anchor(pool, kKind, block);  // the create commit: the pool root
  if (!anchor) return anchor.error();
  return std::unique_ptr<FPTree>(new FPTree(pool, &(*anchor)->anchor));
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
  if (auto r = check_options(a->leaf_capacity, a->inner_fanout, a->hash_kind, a->group_leaves,
                             Status::corrupt);
      !r)
    return r.error();
  // Pools made before the log array have log_count 0 and a 128-byte anchor: one log.
  if (a->log_count > kSplitLogs ||
      !kit::BlockCheck(pool).holds(pool.root(), 64 * (1 + std::size_t{a->logs()}), 64))
    return Error{Status::corrupt, "fptree: anchor declares " + std::to_string(a->log_count) +
                                      " split logs, its block holds fewer (or more than " +
                                      std::to_string(kSplitLogs) + ")"};
  std::unique_ptr<FPTree> tree(new FPTree(pool, a));
  const bool trace_values = pool.values_are_blocks();
  auto t0 = std::chrono::steady_clock::now();
  if (auto r = trace_values ? tree->visit_blocks([](std::uint64_t) {}) : kit::recover(pool, *tree); !r)
    return r.error();
  tree->open_times_.trace_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  if (auto r = tree->replay_split_logs(); !r) return r.error();
  tree->open_times_.replay_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> chain;
  if (auto r = tree->rebuild_inner(&chain); !r) return r.error();
  tree->open_times_.rebuild_ms = ms_since(t0);
  if (trace_values) {
    t0 = std::chrono::steady_clock::now();
    if (auto r = kit::recover(pool, *tree); !r) return r.error();
    tree->open_times_.trace_ms += ms_since(t0);
  }
  // The free leaves (App. B), after the trace: releasing an emptied group frees its block.
  if (tree->groups_.enabled()) tree->groups_.rebuild(chain);
  return tree;
}

Status FPTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status FPTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status FPTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

// Alg. 1: route through DRAM, filter by fingerprint, compare keys. Concurrent form (the
// paper's Find aborts its transaction when the leaf is locked): the leaf's version is read
// once no writer is inside it, and every word read from the leaf (bitmap, fingerprints, a
// slot's key word, inline bit and value) is re-validated against it before the key is
// compared or the value returned. A writer leaves the leaf only after its commit is
// durable, so a validated read never returns a value a crash could take back.
std::optional<Value> FPTree::lookup(Key k) const {
  kit::EpochReclaimer::Pin pin(epochs_);
  const std::uint8_t fp = fp_of(k);
restart:
  std::uint64_t off, lv;
  if (!reader_leaf(k, &off, &lv)) return std::nullopt;
  const LeafRef l = leaf(off);
  std::uint64_t m = l.fingerprint_hits_sync(fp) & l.load(l.bitmap_word());
  for (; m != 0; m &= m - 1) {
    const int i = std::countr_zero(m);
    const Slot* s = l.slot(i);
    const std::uint64_t kw = l.load(&s->key);
    const Value v = l.load(&s->value);
    const bool inl = (l.load(l.inline_word()) >> i) & 1;
    if (!leaf_unchanged(off, lv)) goto restart;
    // A validated key word: an inline key, or a key block the pin keeps.
    if (inl ? k.size() == 8 && std::memcmp(&kw, k.data(), 8) == 0 : l.block_key_equals(kw, k))
      return v;
  }
  if (!leaf_unchanged(off, lv)) goto restart;
  return std::nullopt;
}

std::vector<int> FPTree::sorted_slots(LeafRef l) const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(l.count()));
  for (std::uint64_t m = l.bitmap(); m != 0; m &= m - 1) out.push_back(std::countr_zero(m));
  std::sort(out.begin(), out.end(),
            [&](int a, int b) { return compare_keys(l.key(a), l.key(b)) < 0; });
  return out;
}

// Leaves are unsorted: each leaf's live entries are copied under its version (validated),
// sorted, and reported if above the last key reported (or at/above `from`). The next leaf
// comes from the validated copy; a leaf found unlinked (obsolete) sends the scan back to
// the inner nodes with the last key reported. Only the epoch pin is held while the
// visitor runs (it may call back into the tree).
template <bool kBounded>
std::size_t FPTree::read_range(Key from, Key hi, std::size_t max, Visitor v) const {
  kit::EpochReclaimer::NestablePin pin(epochs_);
  struct Item {
    std::uint64_t kw;
    Value v;
    bool inl;
  };
  std::vector<Item> items;
  std::vector<std::pair<Key, Value>> ents;
  std::string last;
  bool have_last = false;
  std::size_t n = 0;
  std::uint64_t off = 0, lv = 0;
  bool reroute = true;
  for (;;) {
    if (reroute) {
      if (!reader_leaf(have_last ? as_key(last) : from, &off, &lv)) return n;
      reroute = false;
    }
    const LeafRef l = leaf(off);
    items.clear();
    const std::uint64_t lock = l.load(l.lock_word());
    const std::uint64_t bm = l.load(l.bitmap_word()) & geo_.mask();
    const std::uint64_t im = l.load(l.inline_word());
    const std::uint64_t next = l.load(l.next_word());
    for (std::uint64_t m = bm; m != 0; m &= m - 1) {
      const int i = std::countr_zero(m);
      items.push_back({l.load(&l.slot(i)->key), l.load(&l.slot(i)->value), ((im >> i) & 1) != 0});
    }
    if (!leaf_unchanged(off, lv)) {
      lv = leaf_version(off);
      continue;
    }
    if (kit::gen_lock_obsolete(lock, gen_)) {  // unlinked after we read its predecessor
      reroute = true;
      continue;
    }
    ents.clear();
    for (const Item& it : items)
      ents.emplace_back(it.inl ? Key{reinterpret_cast<const std::byte*>(&it.kw), 8} : l.block_key(it.kw),
                        it.v);
    std::sort(ents.begin(), ents.end(),
              [](const auto& a, const auto& b) { return compare_keys(a.first, b.first) < 0; });
    const Key* reported = nullptr;
    for (const auto& [k, val] : ents) {
      if (have_last ? compare_keys(k, as_key(last)) <= 0 : compare_keys(k, from) < 0) continue;
      if (kBounded && compare_keys(k, hi) >= 0) return n;
      ++n;
      reported = &k;
      if (!v(k, val) || n == max) return n;
    }
    if (reported != nullptr) {
      last.assign(reinterpret_cast<const char*>(reported->data()), reported->size());
      have_last = true;
    }
    if (next == 0) return n;
    off = next;
    lv = leaf_version(off);
  }
}

std::size_t FPTree::range(Key lo, Key hi, Visitor v) const {
  return read_range<true>(lo, hi, 0, std::move(v));
}

std::size_t FPTree::scan(Key from, std::size_t max, Visitor v) const {
  if (max == 0) return 0;
  return read_range<false>(from, Key{}, max, std::move(v));
}

Result<void> FPTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  if (auto r = walk_leaves(pool_, anchor_, geo_, v, [](std::uint64_t, std::uint64_t) {}); !r)
    return r;
  // Unlinked, not yet freed: still the tree's (epoch.h). Only the plain pool blocks: a DRAM
  // inner node is no pool block, and a group's leaf lies inside its group's block.
  epochs_.for_each_retired([&](std::uint64_t x) {
    if ((x & 3) == 0 && (x & kTagGroupLeaf) == 0) v(x);
  });
  return {};
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::FPTree);
