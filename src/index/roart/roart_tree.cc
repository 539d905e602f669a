#include "index/roart/roart_tree.h"

#include <algorithm>
#include <bit>

#include "index/kit/anchor.h"
#include "index/registry.h"
#include "index/roart/roart_lock.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::roart {

#if WORT_FAULTS
std::atomic<RaceHook> g_lookup_matched_hook{nullptr};
void* g_lookup_matched_ctx = nullptr;
std::atomic<RaceHook> g_write_descended_hook{nullptr};
void* g_write_descended_ctx = nullptr;
std::atomic<RaceHook> g_scan_slot_hook{nullptr};
void* g_scan_slot_ctx = nullptr;
std::atomic<bool> g_broken_lookup_rereads_slot{false};
std::atomic<bool> g_broken_write_takes_empty_slot{false};
std::atomic<bool> g_broken_scan_reports_twice{false};

void call_race_hook(const std::atomic<RaceHook>& h, void* const& ctx) noexcept {
  if (RaceHook f = h.load(std::memory_order_relaxed)) f(ctx);
}
#endif

Roart::Roart(Pool& pool, Anchor* anchor)
    : pool_(pool),
      anchor_(anchor),
      flags_(anchor->flags),
      gen_(pool.generation()),
      epochs_(&kit::free_to_allocator, &pool.allocator()) {}

//! Frees what is still retired (no operation may be running).
Roart::~Roart() {
  if (trace_thread_.joinable()) trace_thread_.join();
  epochs_.drain();
}

Result<std::unique_ptr<Roart>> Roart::create(Pool& pool, const IndexOptions& opts) {
  if ((opts.words[0] & ~kAllFlags) != 0 || opts.words[1] || opts.words[2] || opts.words[3])
    return Error{Status::invalid_argument, "roart: unknown create option bits"};
  Anchor img{};
  img.magic = kAnchorMagic;
  img.flags = opts.words[0];
  auto a = kit::create_anchor(pool, kKind, img);  // the create commit: the pool root
  if (!a) return a.error();
  return std::unique_ptr<Roart>(new Roart(pool, *a));
}

Result<std::unique_ptr<Roart>> Roart::open(Pool& pool) {
  auto a = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!a) return a.error();
  if (((*a)->flags & ~kAllFlags) != 0)
    return Error{Status::corrupt, "roart: anchor holds unknown option bits"};
  std::unique_ptr<Roart> t(new Roart(pool, *a));
  // The checked walk and the allocator's trace. The generation the pool bumped for this
  // open makes every node's metadata stale: each is rebuilt when first touched.
  if (auto r = kit::recover(pool, *t); !r) return r.error();
  return t;
}

NodeFlags Roart::node_flags() const noexcept {
  return NodeFlags{(flags_ & kNoEntryCompression) == 0, (flags_ & kNoSelectivePersist) == 0};
}

//! The generation check (§3.3.1): a node stamped with an older generation has metadata
//! from a previous session (possibly torn by a crash); rebuild it from the entries.
//! Concurrent first touches are latched by the block's lock word (§3.3.1: "per-node latch
//! for recovery"): its generation tag is stale, so it is free; the winner rebuilds and
//! stamps the generation (a release store), the others wait in lock_word and then find the
//! stamp. The lock word is free again afterwards. An obsolete block in this generation has
//! been touched already, so it never reaches the rebuild.
void Roart::rebuild_latched(NodeBase* n) const {
  if (!lock_word(&n->lock, gen_)) return;
  if (n->generation.get() != gen_) {
    rebuild_node_meta(n, gen_);
    rebuilds_.fetch_add(1, std::memory_order_relaxed);
  }
  unlock_word(&n->lock, gen_, false);
}

void Roart::rebuild_latched(LeafArray* a) const {
  if (!lock_word(&a->lock, gen_)) return;
  if (a->generation.get() != gen_) {
    rebuild_array_meta(a, gen_);
    rebuilds_.fetch_add(1, std::memory_order_relaxed);
  }
  unlock_word(&a->lock, gen_, false);
}

//! The fingerprints filter (SSE2 over the slots, not the bitmap: readers need no metadata);
//! a candidate slot is re-read whole before its leaf is compared, and that one read is the
//! leaf returned in *match: a lock-free reader must not read the slot again (a writer may
//! have removed the key and put another key's leaf there meanwhile).
int Roart::find_in_array(const LeafArray* a, Key k, std::uint16_t fp, const Leaf** match) const {
  return scan_fingerprints(a, fp, [&](unsigned i) {
    const LeafSlot s = a->slot[i].get();
    if (s == 0 || slot_fp(s) != fp || !leaf_matches(slot_leaf_ptr(s), k)) return false;
    if (match != nullptr) *match = slot_leaf_ptr(s);
    return true;
  });
}

//! Some leaf of the subtree at r (for compressed-path bytes beyond the prefix word).
const Leaf* Roart::any_leaf(Ref r) const {
  while (r != kNull) {
    if (is_leaf(r)) return leaf(r);
    if (is_array(r)) {
      const LeafArray* a = array(r);
      for (unsigned i = 0; i < a->cap; ++i) {
        const LeafSlot sl = a->slot[i];
        if (sl != 0) return slot_leaf_ptr(sl);
      }
      return nullptr;
    }
    const NodeBase* n = node(r);
    if (const Ref e = n->eok; e != kNull) return leaf(e);
    Children c;
    collect_children(n, c);
    r = c.n ? c.ref[0] : kNull;
  }
  return nullptr;
}

//! The prefix word for key bytes [from, to) of w.
PrefixWord Roart::prefix_from(Key w, unsigned from, unsigned to) const {
  PrefixWord p{};
  p.len = static_cast<std::uint16_t>(to - from);
  for (unsigned i = 0; i < kStoredPrefix && from + i < to; ++i) p.bytes[i] = key_byte(w, from + i);
  return p;
}

//! Lookup with the pessimistic prefix: a consistent prefix word is compared byte by byte;
//! an inconsistent one (interrupted split/merge) is skipped, the leaf decides.
const Leaf* Roart::find_leaf(Key k) const {
  Ref r = anchor_->root;  // the caller holds an epoch pin
  unsigned depth = 0;
  while (r != kNull) {
    if (is_leaf(r)) return leaf_matches(leaf(r), k) ? leaf(r) : nullptr;
    if (is_array(r)) {
      const LeafArray* a = touch_array(r);
      const Leaf* match = nullptr;
      const int i = find_in_array(a, k, fingerprint(k), &match);
      if (i < 0) return nullptr;
#if WORT_FAULTS
      if (WORT_FAULT_HOOK_SET(g_lookup_matched_hook)) [[unlikely]]
        return lookup_window(a, static_cast<unsigned>(i), match);
#endif
      return match;
    }
    NodeBase* n = touch(r);
    // One load of the prefix word, taken apart in a register: {len:16 | bytes[6]:48}.
    std::uint64_t pw =
        __atomic_load_n(reinterpret_cast<const std::uint64_t*>(&n->prefix.raw), __ATOMIC_ACQUIRE);
    const unsigned plen = static_cast<std::uint16_t>(pw);
    if (plen != 0 && depth + plen == n->level) {
      const unsigned stored = std::min<unsigned>(plen, kStoredPrefix);
      pw >>= 16;
      for (unsigned i = 0; i < stored; ++i, pw >>= 8)
        if (depth + i >= k.size() || key_byte(k, depth + i) != static_cast<std::uint8_t>(pw))
          return nullptr;
    }
    const unsigned pos = n->level;
    if (k.size() < pos) return nullptr;
    if (k.size() == pos) {
      r = n->eok;
      continue;
    }
    if (n->type == NodeType::n256) {  // the common top levels: no call
      r = reinterpret_cast<const Node256*>(n)->child[key_byte(k, pos)];
    } else {
      const ChildSlot cs = find_child(n, key_byte(k, pos));
      if (cs.word == nullptr) return nullptr;
      r = cs.get();
    }
    depth = pos + 1;
  }
  return nullptr;
}

#if WORT_FAULTS
//! Tests only: the window of the first churn race, between a lookup's match in slot
//! i of an array and its return. The hook may remove the key and put another key's leaf in
//! slot i; the matched leaf stays valid (this thread's pin keeps it from being freed), and
//! is the answer. The broken variant reads slot i again, as the old lookup did.
[[gnu::noinline, gnu::cold]] const Leaf* Roart::lookup_window(const LeafArray* a, unsigned i,
                                                             const Leaf* match) const noexcept {
  call_race_hook(g_lookup_matched_hook, g_lookup_matched_ctx);
  if (WORT_FAULT(g_broken_lookup_rereads_slot)) {
    const LeafSlot s = a->slot[i];
    return s == 0 ? nullptr : slot_leaf_ptr(s);
  }
  return match;
}
#endif

std::optional<Value> Roart::lookup(Key k) const {
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]] return lookup_checked(k);
  OpPin g(epochs_);
  const Leaf* l = find_leaf(k);
  if (l == nullptr) return std::nullopt;
  return l->value.get();
}

//! No lock: the value word is the leaf's only mutable word and its commit is one store.
Status Roart::update(Key k, Value v) {
  if (mode_.load(std::memory_order_acquire) != kServing) [[unlikely]]
    if (const Status s = await_walk(); s != Status::ok) return s;
  OpPin g(epochs_);
  const Leaf* l = find_leaf(k);
  if (l == nullptr) return Status::not_found;
  commit_value(pool_, const_cast<Leaf*>(l), v);
  return Status::ok;
}

IndexStats Roart::stats() const {
  IndexStats s;
  const pm::Allocator& al = pool_.allocator();
  s.pm_bytes = al.block_size(pool_.offset_of(anchor_));
  std::uint64_t depth_sum = 0;
  kit::CheckedWalk w(pool_, "roart");
  // Leaf depth = inner nodes above the leaf (a leaf array counts as no level).
  (void)w.run(anchor_->root, [&](std::uint64_t r, std::uint32_t level) {
    const std::uint64_t off = ref_offset(r);
    if (!w.enter(off, 16, 16, "block")) return;
    s.pm_bytes += al.block_size(off);
    if (is_leaf(r)) {
      ++s.keys;
      depth_sum += level;
      s.max_leaf_depth = std::max<std::uint64_t>(s.max_leaf_depth, level);
      ++s.nodes["leaf"];
      return;
    }
    if (is_array(r)) {
      const LeafArray* a = array(r);
      if (!w.fits(off, off, offsetof(LeafArray, slot), "leaf array")) return;
      if (!valid_array_cap(a->cap) || !w.fits(off, off, array_bytes(a->cap), "leaf array")) {
        w.fail("bad leaf array");
        return;
      }
      ++s.nodes["leaf_array"];
      for (unsigned i = 0; i < a->cap; ++i)
        if (const LeafSlot sl = a->slot[i]; sl != 0) w.push(slot_leaf(sl) | kTagLeaf, level);
      return;
    }
    const NodeBase* n = node(r);
    if (!is_inner_type(n->type) || !w.fits(off, off, node_bytes(n->type), "node")) {
      w.fail("bad node");
      return;
    }
    ++s.nodes[node_name(n->type)];
    if (const Ref e = n->eok; e != kNull) w.push(e, level + 1);
    Children c;
    collect_children(n, c);
    for (unsigned i = 0; i < c.n; ++i) w.push(c.ref[i], level + 1);
  });
  s.avg_leaf_depth = s.keys ? static_cast<double>(depth_sum) / static_cast<double>(s.keys) : 0;
  return s;
}

static_assert(IndexConcept<Roart>);
WORT_REGISTER_INDEX(Roart);

}  // namespace wort::roart
