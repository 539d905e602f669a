#include "index/nvtree/nvtree_tree.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "index/kit/anchor.h"
#include "index/nvtree/nvtree_leaf.h"
#include "index/registry.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace nvtree;

NvTree::NvTree(Pool& pool, Anchor* anchor) noexcept : pool_(pool), anchor_(anchor) {
  inner_.configure(anchor->pln_capacity, anchor->in_fanout, anchor->rebuild_fill);
}

namespace {
Result<std::uint32_t> option(std::uint64_t w, std::uint64_t dflt, std::uint64_t lo,
                             std::uint64_t hi, const char* what) {
  if (w == 0) w = dflt;
  if (w < lo || w > hi)
    return Error{Status::invalid_argument, std::string("nvtree: ") + what + " " +
                                               std::to_string(w) + " is not in " +
                                               std::to_string(lo) + ".." + std::to_string(hi)};
  return static_cast<std::uint32_t>(w);
}

Result<void> check_anchor(const Anchor& a) {
  if (a.leaf_capacity < kMinCapacity || a.leaf_capacity > kMaxLeafCapacity ||
      a.pln_capacity < 2 || a.pln_capacity > (1u << 20) || a.in_fanout < 2 ||
      a.in_fanout > (1u << 20) || a.rebuild_fill < 1 || a.rebuild_fill > a.pln_capacity)
    return Error{Status::corrupt, "nvtree: anchor capacities out of range"};
  return {};
}
}  // namespace

Result<std::unique_ptr<NvTree>> NvTree::create(Pool& pool, const IndexOptions& opts) {
  Anchor image{};
  image.magic = kAnchorMagic;
  auto leaf = option(opts.words[0], kDefaultLeafCapacity, kMinCapacity, kMaxLeafCapacity, "leaf capacity");
  if (!leaf) return leaf.error();
  auto pln = option(opts.words[1], kDefaultPlnCapacity, 2, 1u << 20, "PLN capacity");
  if (!pln) return pln.error();
  auto fan = option(opts.words[2], kDefaultInFanout, 2, 1u << 20, "IN fanout");
  if (!fan) return fan.error();
  auto fill = option(opts.words[3], std::max(1u, *pln / 2), 1, *pln, "rebuild fill");
  if (!fill) return fill.error();
  image.leaf_capacity = *leaf;
  image.pln_capacity = *pln;
  image.in_fanout = *fan;
  image.rebuild_fill = *fill;
  // The spare leaf is reserved from the start, so an empty tree always holds the same blocks.
  if (Status s = pool.allocator().allocate(leaf_bytes(image.leaf_capacity), &image.spare); s != Status::ok)
    return Error{s, "nvtree: no space for the spare leaf"};
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) {
    pool.allocator().free(image.spare);
    return anchor.error();
  }
  return std::unique_ptr<NvTree>(new NvTree(pool, *anchor));
}

Result<std::unique_ptr<NvTree>> NvTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  if (auto r = check_anchor(**opened); !r) return r.error();
  std::unique_ptr<NvTree> tree(new NvTree(pool, *opened));
  // In a values_are_blocks pool the trace also scans every value (kit::walk_all), and a scan
  // routes through the DRAM inner nodes: so check the leaves first, rebuild, then trace.
  const bool trace_values = pool.values_are_blocks();
  if (auto r = trace_values ? tree->visit_blocks([](std::uint64_t) {}) : kit::recover(pool, *tree); !r)
    return r.error();
  tree->rebuild_from_leaves();
  if (trace_values)
    if (auto r = kit::recover(pool, *tree); !r) return r.error();
  return tree;
}

// Leaf i's separator is the smallest key above every live key of leaves 0..i-1 (that
// maximum plus a zero byte); the first leaf's is the empty key. Live keys are in list
// order, so each leaf's live keys lie within its bounds.
void NvTree::rebuild_from_leaves() {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<LeafRef> refs;
  std::vector<Entry> live;
  std::string prev_max;
  bool have_prev = false;
  for (std::uint64_t off = anchor_->head; off != 0; off = leaf(off)->next) {
    std::string sep = have_prev ? prev_max + std::string(1, '\0') : std::string();
    live_sorted(base(), leaf(off), live);
    refs.push_back({inner_.make_sep(as_key(sep)), off, static_cast<std::uint32_t>(live.size())});
    if (!live.empty()) {
      std::array<std::byte, 8> buf;
      prev_max = std::string(as_string(entry_key(base(), live.back(), buf)));
      have_prev = true;
    }
  }
  inner_.rebuild(std::move(refs));
  recovery_ns_ = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - t0).count());
}

Status NvTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status NvTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status NvTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

std::optional<Value> NvTree::lookup(Key k) const {
  if (anchor_->head == 0 || k.size() > kMaxKeyLength) return std::nullopt;
  const Probe p(k);
  const Leaf* l = leaf(inner_.leaf_at(inner_.find(p)));
  const int i = find_latest(base(), l, p);
  if (i < 0 || is_delete(l->entries()[i])) return std::nullopt;
  return l->entries()[i].value;
}

// The key form's meta for a new insert entry: the key block an older entry of this key in
// this leaf already has, or a new one (written and flushed; the commit's fence orders it).
Status NvTree::key_meta_for(const Probe& p, const Leaf* l, int latest, std::uint64_t* meta) {
  WORT_DCHECK(p.key.size() <= kMaxKeyLength);  // put() rejects longer keys
  WORT_DCHECK(latest < 0 || (l != nullptr && static_cast<std::uint64_t>(latest) < l->count));
  if (p.key.size() <= kMaxInline) {
    *meta = p.key.size();
    return Status::ok;
  }
  if (latest >= 0) {
    *meta = key_meta(l->entries()[latest]);
    return Status::ok;
  }
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(sizeof(KeyBlock) + p.key.size(), &off); s != Status::ok)
    return s;
  auto* kb = pool_.at<KeyBlock>(off);
  const std::uint64_t len = p.key.size();
  pm::copy(&kb->len, &len, sizeof(len));
  pm::copy(kb + 1, p.key.data(), p.key.size());
  pm::flush(kb, sizeof(KeyBlock) + p.key.size());
  *meta = off;
  return Status::ok;
}

Status NvTree::insert_first_leaf(const Probe& p, Value v) {
  WORT_DCHECK(anchor_->head == 0);  // the list is empty
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(leaf_bytes(anchor_->leaf_capacity), &off); s != Status::ok)
    return s;
  Entry e{p.prefix, 0, v};
  if (Status s = key_meta_for(p, nullptr, -1, &e.meta); s != Status::ok) {
    pool_.allocator().free(off);
    return s;
  }
  init_leaf(leaf(off), anchor_->leaf_capacity, 0, &e, 1);
  pm::publish(&anchor_->head, off);  // the commit: the list's first leaf
  inner_.rebuild({{inner_.make_sep(Key{}), off, 1}});
  return Status::ok;
}

Status NvTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  const Probe p(k);
  if (anchor_->head == 0)
    return mode == PutMode::update ? Status::not_found : insert_first_leaf(p, v);
  ensure_spare();
  for (;;) {
    const Inner::Pos pos = inner_.find(p);
    Leaf* l = leaf(inner_.leaf_at(pos));
    const int i = find_latest(base(), l, p);
    const bool present = i >= 0 && !is_delete(l->entries()[i]);
    if (present && mode == PutMode::insert) return Status::exists;
    if (!present && mode == PutMode::update) return Status::not_found;
    const std::size_t n = present ? 2 : 1;  // an update appends a delete and an insert
    if (l->count + n > l->capacity) {
      if (Status s = split_leaf(pos); s != Status::ok) return s;
      continue;
    }
    Entry e[2];
    std::uint64_t meta = 0;
    if (Status s = key_meta_for(p, l, i, &meta); s != Status::ok) return s;
    if (present) e[0] = {p.prefix, meta | kDeleteFlag, 0};
    e[n - 1] = {p.prefix, meta, v};
    append_and_commit(l, e, n);  // the commit: the leaf's count
    if (!present) ++inner_.live_at(pos);
    return Status::ok;
  }
}

// A remove appends a delete entry; in a full leaf it instead compacts the leaf's live
// entries, less the removed key, into one new leaf (taken from the spare if the pool is
// full), so that a remove never fails for lack of space.
Status NvTree::remove(Key k) {
  if (anchor_->head == 0 || k.size() > kMaxKeyLength) return Status::not_found;
  const Probe p(k);
  ensure_spare();
  const Inner::Pos pos = inner_.find(p);
  Leaf* l = leaf(inner_.leaf_at(pos));
  const int i = find_latest(base(), l, p);
  if (i < 0 || is_delete(l->entries()[i])) return Status::not_found;
  if (inner_.live_at(pos) == 1) return unlink_leaf(pos);  // the commit: the link store
  if (l->count + 1 > l->capacity) return split_leaf(pos, &p);  // the commit: the link store
  const Entry del{p.prefix, key_meta(l->entries()[i]) | kDeleteFlag, 0};
  append_and_commit(l, &del, 1);  // the commit: the leaf's count
  --inner_.live_at(pos);
  return Status::ok;
}

// The remove of a leaf's last live key takes the leaf out of the list (one store into the
// predecessor's next or the anchor's head: the commit), then frees it and its key blocks,
// so that removing every key gives the space back.
Status NvTree::unlink_leaf(Inner::Pos pos) {
  const std::uint64_t off = inner_.leaf_at(pos);
  const Leaf* l = leaf(off);
  const std::uint64_t pred = inner_.predecessor(pos);
  // The removed key is the leaf's last live one, and the link store's word names the leaf.
  WORT_DCHECK(inner_.live_at(pos) == 1);
  WORT_DCHECK(*(pred ? &leaf(pred)->next : &anchor_->head) == off);
  pm::commit(pred ? &leaf(pred)->next : &anchor_->head, l->next);
  free_dead_key_blocks(l, {});
  pool_.allocator().free(off);
  inner_.erase(pos);
  return Status::ok;
}

// Re-reserves the spare leaf a split took: a structural store before the operation's commit.
void NvTree::ensure_spare() {
  if (anchor_->spare != 0) return;
  std::uint64_t off = 0;
  if (pool_.allocator().allocate(leaf_bytes(anchor_->leaf_capacity), &off) != Status::ok) return;
  pm::store_persist(&anchor_->spare, off);
}

// A block for a new leaf: the allocator's, or else the spare (unnamed first: a block must not
// be reachable twice; a crash before the link frees it and the next operation re-reserves).
Status NvTree::allocate_leaf(std::uint64_t* off) {
  if (pool_.allocator().allocate(leaf_bytes(anchor_->leaf_capacity), off) == Status::ok)
    return Status::ok;
  if (anchor_->spare == 0) return Status::out_of_space;
  *off = anchor_->spare;
  pm::store_persist(&anchor_->spare, std::uint64_t{0});
  return Status::ok;
}

// A full leaf's live entries, in key order, go to two new leaves (or, when at most half a
// leaf is live, to one: a compaction), linked L1 -> L2 -> old next; one store of L1 into
// the predecessor's `next` (or the anchor's head) swaps them in; then the old leaf and the
// key blocks only dead entries named are freed, and the DRAM PLN is updated (a PLN
// overflow rebuilds the whole inner structure). Structural: the key set is unchanged.
Status NvTree::split_leaf(Inner::Pos pos, const Probe* drop) {
  const std::uint64_t old_off = inner_.leaf_at(pos);
  const Leaf* old = leaf(old_off);
  std::vector<Entry> live;
  live_sorted(base(), old, live);
  WORT_DCHECK(live.size() == inner_.live_at(pos));  // the PLN's live count is the leaf's
  // No room for the append that asked (a remove's one entry, an update's two).
  WORT_DCHECK(old->count + (drop ? 1 : 2) > old->capacity);
  if (drop) {  // a remove in a full leaf: compact without its key, in one new leaf
    std::erase_if(live, [&](const Entry& e) { return compare(base(), e, *drop) == 0; });
  }
  const unsigned cap = anchor_->leaf_capacity;
  const bool two = !drop && live.size() > cap / 2;
  const std::size_t left_n = two ? live.size() / 2 : live.size();
  std::uint64_t l1 = 0, l2 = 0;
  if (Status s = allocate_leaf(&l1); s != Status::ok) return s;
  if (two) {
    if (Status s = allocate_leaf(&l2); s != Status::ok) {
      pool_.allocator().free(l1);
      return s;
    }
    init_leaf(leaf(l2), cap, old->next, live.data() + left_n, live.size() - left_n);
  }
  init_leaf(leaf(l1), cap, two ? l2 : old->next, live.data(), left_n);
  const std::uint64_t pred = inner_.predecessor(pos);
  std::uint64_t* link = pred ? &leaf(pred)->next : &anchor_->head;
  WORT_DCHECK(*link == old_off && l1 != 0 && l1 % 64 == 0);  // the link names the old leaf
  if (drop) {
    pm::publish(link, l1);  // the remove's commit: the compacted leaf lacks the key
  } else {
    if (!omit_split_fence_) pm::fence();  // both new leaves durable before they are linked in
    pm::store_persist(link, l1);  // the split's one pointer store (not the op's commit)
  }
  free_dead_key_blocks(old, live);
  pool_.allocator().free(old_off);  // (the public reimplementation never freed it)
  Sep sep;
  if (two) {
    std::array<std::byte, 8> buf;
    sep = inner_.make_sep(entry_key(base(), live[left_n], buf));
    ++splits_;
  } else {
    ++compactions_;
  }
  inner_.replace(pos, l1, static_cast<std::uint32_t>(left_n), l2,
                 static_cast<std::uint32_t>(live.size() - left_n), sep);
  return Status::ok;
}

void NvTree::free_dead_key_blocks(const Leaf* l, const std::vector<Entry>& live) {
  std::vector<std::uint64_t> kept, all;
  for (const Entry& e : live)
    if (key_meta(e) > kMaxInline) kept.push_back(key_meta(e));
  for (std::uint64_t i = 0; i < l->count; ++i)
    if (key_meta(l->entries()[i]) > kMaxInline) all.push_back(key_meta(l->entries()[i]));
  std::sort(kept.begin(), kept.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (std::uint64_t b : all)
    if (!std::binary_search(kept.begin(), kept.end(), b)) pool_.allocator().free(b);
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::NvTree);
