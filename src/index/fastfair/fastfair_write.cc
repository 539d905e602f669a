// FAST&FAIR writers: insert / upsert / update / remove, FAIR splits (Algorithm 2), the
// atomic root split, and the lazy repairs of §5.2 (a dead slot, an uncut split, a sibling
// missing from its parent).
//
// Every insert reserves the blocks it may need (one node per full level on its path, three
// for a root split, separator copies, the key block) before its first pool store, so
// out_of_space changes nothing.
#include <sched.h>

#include <cstring>

#include "index/kit/anchor.h"
#include "index/fastfair/fastfair_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fastfair;

namespace {
constexpr unsigned kMaxRestarts = 4 * kMaxLevels;
}  // namespace

// --- blocks -----------------------------------------------------------------------------

Status FastFairTree::make_key_word(Key k, std::uint64_t* word) {
  WORT_DCHECK(k.size() <= kMaxKeyLength);  // put() rejects longer keys
  const SearchKey s = SearchKey::of(k);
  if (s.inl) {
    *word = s.word;
    return Status::ok;
  }
  std::uint64_t off = 0;
  if (Status st = pool_.allocator().allocate(sizeof(KeyBlock) + k.size(), &off);
      st != Status::ok)
    return st;
  KeyBlock b{};
  b.len = static_cast<std::uint32_t>(k.size());
  pm::copy(base_ + off, &b, sizeof b);
  if (!k.empty()) pm::copy(base_ + off + sizeof b, k.data(), k.size());
  pm::flush(base_ + off, sizeof b + k.size());  // fenced before the record names it
  *word = kTagBase | off;
  return Status::ok;
}

Status FastFairTree::copy_key_word(std::uint64_t word, std::uint64_t* copy) {
  if (!is_indirect(word)) {
    *copy = word;
    return Status::ok;
  }
  std::byte scratch[8];
  return make_key_word(kr_.bytes(word, scratch), copy);
}

Status FastFairTree::reserve_key_copy(std::uint64_t word, std::uint64_t* block) {
  *block = 0;
  if (!is_indirect(word)) return Status::ok;
  std::byte scratch[8];
  return pool_.allocator().allocate(sizeof(KeyBlock) + kr_.bytes(word, scratch).size(), block);
}

std::uint64_t FastFairTree::fill_key_copy(std::uint64_t word, std::uint64_t block) {
  WORT_DCHECK(is_indirect(word) && block != 0 && block % 16 == 0);  // reserve_key_copy's block
  std::byte scratch[8];
  const Key k = kr_.bytes(word, scratch);
  KeyBlock b{};
  b.len = static_cast<std::uint32_t>(k.size());
  pm::copy(base_ + block, &b, sizeof b);
  if (!k.empty()) pm::copy(base_ + block + sizeof b, k.data(), k.size());
  pm::flush(base_ + block, sizeof b + k.size());  // fenced before a record names it
  return kTagBase | block;
}

std::uint64_t FastFairTree::fresh_node(std::uint64_t off, std::uint8_t level,
                                       std::uint64_t leftmost, std::uint64_t sibling,
                                       const Record* recs, unsigned n) {
  WORT_DCHECK(off != 0 && off % 64 == 0);  // a node block: a record never straddles a line
  WORT_DCHECK(n <= slots_ && level < kMaxLevels);
  Node* nd = node(off);
  NodeHeader h{};
  h.leftmost = leftmost;
  h.sibling = sibling;
  h.tag = kNodeTag;
  h.level = level;
  h.slots = static_cast<std::uint16_t>(slots_);
  if (level == 0) {  // an SMO's new leaf: born locked by it (the structure path's alone)
    h.spare = gen_ << 2 | kit::kGenLocked;  // a restart never sees it held (older generation)
    held_.push_back(Held{off, false});
  }
  pm::copy(&nd->h, &h, sizeof h);
  if (n != 0) pm::copy(nd->rec, recs, n * sizeof(Record));
  pm::fill(&nd->rec[n], 0xFF, node_size_ - sizeof h - n * sizeof(Record));  // kEmpty keys
  pm::flush(nd, node_size_);
  return off;
}

// --- repairs ----------------------------------------------------------------------------

// A dead slot (a FAST delete's, or a crashed insert's): squeezed out by the left shift
// (stores before the caller's commit; no commit of its own).
bool FastFairTree::compact(NodeRef nr) {
  if (faults::active & faults::skip_dead_repair) [[unlikely]] {
    even_dead_.store(true, std::memory_order_relaxed);  // a later insert may make it even
    return false;
  }
  if (!repair_dead(nr)) return false;
  __atomic_fetch_add(&repairs_.dead_slots, 1, __ATOMIC_RELAXED);  // leaf-path writers too
  return true;
}

bool FastFairTree::compact(NodeRef nr, const NodeRef::Scan& sc) {
  if (sc.dead < 0) return false;  // the common case: nothing to repair, nothing read again
  if (faults::active & faults::skip_dead_repair) [[unlikely]] {
    even_dead_.store(true, std::memory_order_relaxed);  // a later insert may make it even
    return false;
  }
  repair_dead(nr, sc.end, sc.dead);
  __atomic_fetch_add(&repairs_.dead_slots, 1, __ATOMIC_RELAXED);
  return true;
}

// An uncut split (crash between the sibling link and the cut: this node still holds
// copies of its sibling's first records; also a merge or borrow between append and
// unlink). Algorithm 1, line 2: a writer compares with its sibling's first key. Returns
// the slot to cut at, or -1. Reads only.
bool FastFairTree::uncut(NodeRef nr, unsigned end) const {
  const std::uint64_t sib = nr.n->h.sibling;
  if (sib == 0 || end == 0) return false;
  const std::uint64_t first = ref(sib).first_key();
  const std::uint64_t last = nr.rec()[end - 1].key;  // (the slot before the end is live)
  return first != kEmpty && kr_.compare_words(first, last) <= 0;
}

int FastFairTree::uncut_at(NodeRef nr) const {
  const unsigned end = nr.end();
  if (!uncut(nr, end)) return -1;
  const std::uint64_t first = ref(nr.n->h.sibling).first_key();
  unsigned p = 0;
  while (p < end && kr_.compare_words(nr.rec()[p].key, first) < 0) ++p;
  return static_cast<int>(p);
}

bool FastFairTree::repair_cut(NodeRef nr) {
  const int p = uncut_at(nr);
  if (p < 0) return false;
  pm::store_persist(&nr.rec()[p].key, kEmpty);  // the cut the crash missed
  ++repairs_.cuts;
  return true;
}

// Inserts (copy of sib's first key, sib) into level + 1, unless it is there already.
Status FastFairTree::link_in_parent(unsigned level, std::uint64_t sib) {
  const std::uint64_t first = ref(sib).first_key();
  std::byte scratch[8];
  const SearchKey s = SearchKey::of(kr_.bytes(first, scratch));
  Path path;
  for (unsigned attempt = 0;; ++attempt) {
    if (attempt > kMaxRestarts) return Status::corrupt;
    Status err = Status::ok;
    const Descent d = descend(s, level + 1, path, err);
    if (d == Descent::error) return err;
    if (d == Descent::ok) break;
  }
  NodeRef p = ref(path.at[level + 1]);
  if (repair_cut(p)) return link_in_parent(level, sib);
  compact(p);  // (plan() below would; first, so the search below sees no dead slot)
  const unsigned end = p.end();
  for (unsigned i = 0; i < end; ++i)
    if (p.rec()[i].ptr == sib) return Status::ok;
  Reserve res;
  if (Status st = plan(path, level + 1, res); st == Status::exists) {
    return link_in_parent(level, sib);  // a full node on the path was repaired: start over
  } else if (st != Status::ok) {
    return st;
  }
  std::uint64_t sep = 0;
  if (Status st = copy_key_word(first, &sep); st != Status::ok) {
    release(res);
    return st;
  }
  insert_up(path, level + 1, sep, sib, nullptr, is_indirect(sep), res);
  release(res);
  ++repairs_.parent_links;
  return Status::ok;
}

// --- descent ----------------------------------------------------------------------------

// Root to `target`, recording the node used at each level. Needing to move right means a
// crash left this node uncut (cut here, a store with no commit; the caller restarts) or its
// sibling out of the parent. With `link`, the sibling is inserted into the parent (commits)
// and the caller restarts: a path that splits or rebalances must be the parents'. Without,
// the descent follows the sibling as a reader does and sets path.moved_right: enough for a
// writer that only finds its key (an update, a no-op), which so makes no commit it does
// not declare; one that must change the tree's shape descends again with `link`.
FastFairTree::Descent FastFairTree::descend(const SearchKey& s, unsigned target, Path& path,
                                            Status& err, bool link) {
  std::uint64_t cur = anchor_->root;
  unsigned level = node(cur)->h.level;
  path.height = level;
  path.moved_right = false;
  for (;;) {
    NodeRef nr = ref(cur);
    if (nr.leaf()) hold(cur);  // before the leaf is read: leaf-path writers change leaves
    bool beyond = true;
    const std::uint64_t child = nr.leaf() ? 0 : nr.route(s, kr_, &beyond);
    if (nr.leaf()) beyond = nr.find(s, kr_) == -2;
    const std::uint64_t sib = beyond ? sibling_to_follow(nr, s) : 0;
    if (sib != 0) {
      if (repair_cut(nr)) return Descent::restart;
      if (level == path.height) {  // a root never has a sibling (root splits are atomic)
        err = Status::corrupt;
        return Descent::error;
      }
      if (!link) {  // as a reader does (Algorithm 3); the path is not one to change the tree by
        path.moved_right = true;
        cur = sib;
        continue;
      }
      if (Status st = link_in_parent(level, sib); st != Status::ok) {
        err = st;
        return Descent::error;
      }
      return Descent::restart;
    }
    path.at[level] = cur;
    if (level == target) return Descent::ok;
    cur = child;
    --level;
  }
}

// --- planning ---------------------------------------------------------------------------

// Reserves a node for every full node from `level` up (three for a full root) and a copy
// of each separator that will move up. Every node the insert will change is repaired
// first: a dead slot is squeezed out in place; an uncut split is cut and the caller
// restarts (returns exists: the cut may hand the key to the sibling). out_of_space:
// nothing reserved.
Status FastFairTree::plan(const Path& path, unsigned level, Reserve& res) {
  const unsigned m = slots_ / 2;
  unsigned nodes = 0;
  for (unsigned l = level;; ++l) {
    NodeRef nr = ref(path.at[l]);
    auto [end, dead] = nr.end_and_dead();  // the node's one read here
    if (uncut(nr, end) && repair_cut(nr)) {
      release(res);
      return Status::exists;
    }
    if (compact(nr, NodeRef::Scan{end, dead, -2, 0})) --end;  // the left shift freed a slot
    if (end < slots_) break;
    std::uint64_t sep = 0;
    if (Status st = copy_key_word(nr.rec()[m].key, &sep); st != Status::ok) {
      release(res);
      return st;
    }
    res.seps.push_back(sep);
    if (l == path.height) {
      nodes += 3;
      break;
    }
    nodes += 1;
  }
  for (unsigned i = 0; i < nodes; ++i) {
    std::uint64_t off = 0;
    if (Status st = pool_.allocator().allocate(node_size_, &off); st != Status::ok) {
      release(res);
      return st;
    }
    res.nodes.push_back(off);
  }
  return Status::ok;
}

void FastFairTree::release(Reserve& res) {
  for (std::size_t i = res.next_node; i < res.nodes.size(); ++i) pool_.allocator().free(res.nodes[i]);
  for (std::uint64_t sep : res.seps)
    if (is_indirect(sep)) pool_.allocator().free(sep & kOffsetMask);
  res.nodes.clear();
  res.seps.clear();
  res.next_node = 0;
}

// --- splits -----------------------------------------------------------------------------

// FAIR split (Algorithm 2): the sibling gets the upper half (an inner node's median stays
// as the sibling's rec[0], its low fence: FAST_FAIR issue #5) and is written back and
// fenced; the link store is written back; the cut (pm::publish: its fence orders the link)
// commits. Returns the separator word (the sibling's first key).
std::uint64_t FastFairTree::split(NodeRef nr, std::uint64_t boff, std::uint64_t* sep) {
  WORT_DCHECK(nr.end() == slots_ && nr.find_dead(slots_) < 0);  // full, compacted by plan()
  WORT_DCHECK(boff != 0 && boff % 64 == 0 && boff != off_of(nr.n));
  const unsigned m = slots_ / 2;
  Record* r = nr.rec();
  fresh_node(boff, nr.n->h.level, 0, nr.n->h.sibling, &r[m], slots_ - m);
  if (!(faults::active & faults::split_no_fence_before_link)) [[likely]]
    pm::fence();  // the sibling is durable before the link can be
  pm::store_release(&nr.n->h.sibling, boff);  // readers may follow it before the cut
  pm::flush(&nr.n->h.sibling, sizeof(std::uint64_t));
  *sep = r[m].key;
  if (faults::active & faults::stop_after_link) [[unlikely]] {
    pm::fence();
    return 0;
  }
  pm::publish_nt(&r[m].key, kEmpty);  // commit of the split: the upper half leaves this node
  return boff;
}

// The root splits by copy: lower half, upper half and a new root are built in fresh nodes
// and one store of the anchor's root word commits all three (Witcher bug 5: the authors'
// in-place root split left an orphan two-node list if it crashed before the new root).
void FastFairTree::split_root(NodeRef nr, Reserve& res, std::uint64_t sep_copy,
                              std::uint64_t* a1, std::uint64_t* b, std::uint64_t* sep) {
  WORT_DCHECK(off_of(nr.n) == anchor_->root && nr.end() == slots_);
  WORT_DCHECK(res.next_node + 3 <= res.nodes.size());  // plan() reserved three nodes
  const unsigned m = slots_ / 2;
  const std::uint8_t level = nr.n->h.level;
  *a1 = res.nodes[res.next_node++];
  *b = res.nodes[res.next_node++];
  const std::uint64_t root = res.nodes[res.next_node++];
  fresh_node(*b, level, 0, 0, &nr.rec()[m], slots_ - m);
  fresh_node(*a1, level, nr.n->h.leftmost, *b, nr.rec(), m);
  const Record up{sep_copy, *b};
  fresh_node(root, static_cast<std::uint8_t>(level + 1), *a1, 0, &up, 1);
  *sep = nr.rec()[m].key;
  pm::publish_nt(&anchor_->root, root);  // commit of the root split
  retire_node(off_of(nr.n));  // its key blocks now belong to *a1 and *b
}

namespace {
unsigned word_position(NodeRef nr, const KeyReader& kr, std::uint64_t key, unsigned end) {
  unsigned i = 0;
  while (i < end && kr.compare_words(nr.rec()[i].key, key) < 0) ++i;
  return i;
}
}  // namespace

// Inserts {key, ptr} at `level` of the path, splitting full nodes upwards. `s` is the
// search key when key is the user's (level 0), for the faster position search.
void FastFairTree::insert_up(const Path& path, unsigned level, std::uint64_t key,
                             std::uint64_t ptr, const SearchKey* s, bool unfenced,
                             Reserve& res) {
  WORT_DCHECK(level <= path.height && key != kEmpty);
  std::size_t sep_i = 0;
  auto put_into = [&](std::uint64_t off, unsigned end, bool unf) {
    NodeRef t = ref(off);
    const unsigned pos = s ? t.lower_bound(*s, kr_, end) : word_position(t, kr_, key, end);
    // The user's key is not in the leaf already (put() found no live record for it).
    WORT_DCHECK(!s || pos == end || kr_.compare(*s, t.rec()[pos].key) < 0);
    fast_insert(t, end, pos, key, ptr, unf);
  };
  for (;;) {
    NodeRef nr = ref(path.at[level]);
    if (const unsigned end = nr.end(); end < slots_) {
      put_into(path.at[level], end, unfenced);
      return;
    }
    std::uint64_t sep = 0;
    if (level == path.height) {
      std::uint64_t a1 = 0, b = 0;
      const std::uint64_t sep_copy = res.seps[sep_i];
      res.seps[sep_i++] = 0;  // now owned by the new root's record
      split_root(nr, res, sep_copy, &a1, &b, &sep);
      const std::uint64_t to = kr_.compare_words(key, sep) < 0 ? a1 : b;
      put_into(to, ref(to).end(), false);
      return;
    }
    WORT_DCHECK(res.next_node < res.nodes.size() && sep_i < res.seps.size());
    const std::uint64_t boff = res.nodes[res.next_node++];
    if (split(nr, boff, &sep) == 0) return;  // faults::stop_after_link (tests)
    // Either half ends where the split left it: the old node at the cut, the new one after
    // its copied records.
    const bool left = kr_.compare_words(key, sep) < 0;
    put_into(left ? path.at[level] : boff, left ? slots_ / 2 : slots_ - slots_ / 2, false);
    if (faults::active & faults::stop_after_cut) [[unlikely]] return;
    // Then the parent learns of the sibling (FAIR step (5)-(7)).
    key = res.seps[sep_i];
    res.seps[sep_i++] = 0;  // now owned by the parent's record
    ptr = boff;
    s = nullptr;
    unfenced = false;  // the separator copy was written back before the split's fences
    ++level;
  }
}

// --- operations -------------------------------------------------------------------------
//
// Every write pins the epoch (a node it read may be unlinked by another writer meanwhile:
// never freed while pinned) and, after its unpin, frees what no pinned thread can hold.
// It first tries the leaf path (one leaf lock; see lock_leaf); a write that must split,
// merge, borrow or repair a crash state takes the structure path: the structure lock, then
// the single-writer code below (put_smo, remove_smo) with the lock of every leaf it reads or
// changes (hold()).

namespace {
constexpr unsigned kLeafAttempts = 16;  // validation failures before the structure path
}  // namespace

std::uint64_t FastFairTree::smo_quiet() const noexcept {
  for (unsigned spins = 0;; ++spins) {
    const std::uint64_t q = smo_seq_.load(std::memory_order_acquire);
    if ((q & 1u) == 0) [[likely]] {
      if (spins == 0) [[likely]] return q;
      // A writer that waited descends next: in its turn (pm::after_wait; crash simulator),
      // and on the sequence as it is then.
      pm::after_wait(&smo_seq_);
      spins = ~0u;  // read again, as a first look
      continue;
    }
    pm::waiting(&smo_seq_);
    if (spins < 64) __builtin_ia32_pause();
    else sched_yield();
  }
}

std::uint64_t FastFairTree::writer_leaf(const SearchKey& s, bool* root) const {
  NodeRef nr = ref(ld(&anchor_->root));
  *root = nr.leaf();
  while (!nr.leaf()) {  // a node's level never changes
    bool beyond = false;
    const std::uint64_t child = nr.route(s, kr_, &beyond);
    if (beyond && sibling_to_follow(nr, s) != 0) return 0;
    nr = ref(child);
  }
  return off_of(nr.n);
}

// The leaf path's lock and its re-validation. Inner nodes change only under the structure
// lock, and every SMO makes smo_seq_ odd before its first store and even after its last,
// and changes a leaf's key range only holding that leaf's lock. So once the leaf is locked
// and read: the sequence unchanged since before the descent means no SMO ran during the
// descent or changed this leaf, and the leaf the descent found is still the one for s (a
// descent that read a word an SMO stored synchronises with that SMO and sees the new
// sequence). An unlinked leaf is obsolete (gen_lock fails). A sibling to follow, or an
// uncut split (crash states: the leaf's range is not what the parent says), goes to the
// structure path, whose descent repairs them as before. (The sibling's first key alone
// cannot validate a leaf: it rises when the sibling's first record is removed, so a key
// between the parent's separator and that first key would pass it and land in the wrong
// leaf; see README "Concurrency".)
bool FastFairTree::lock_leaf(const SearchKey& s, Locked* lk) {
  for (unsigned attempt = 0; attempt < kLeafAttempts; ++attempt) {
    const std::uint64_t seq = smo_quiet();
    bool root = false;
    const std::uint64_t off = writer_leaf(s, &root);
    if (off == 0) return false;
    const unsigned f = faults::active;  // (tests only)
    bool validate = true;
    if (f != 0) [[unlikely]] {
      faults::pause(f, 0);
      validate = !(f & faults::no_writer_validation);
    }
    if (!kit::gen_lock(&node(off)->h.spare, gen_) && validate) continue;  // unlinked: again
    const NodeRef leaf = ref(off);
    // The leaf's one read before the write; a dead slot is looked for only where one may be
    // (an odd counter: a delete's; even_dead_: a crash's).
    const bool clean = (leaf.n->h.switch_counter & 1u) == 0 &&
                       !even_dead_.load(std::memory_order_relaxed);
    const NodeRef::Scan sc = clean ? leaf.scan_clean(s, kr_) : leaf.scan(s, kr_);
    const bool uncut_split = uncut(leaf, sc.end);
    const bool right = sc.at == -2 && sibling_to_follow(leaf, s) != 0;
    if (validate && smo_seq_.load(std::memory_order_acquire) != seq) [[unlikely]] {
      unlock_leaf(off);  // an SMO ran meanwhile: descend again
      continue;
    }
    if (uncut_split || right) [[unlikely]] {
      unlock_leaf(off);
      return false;
    }
    if (f != 0) [[unlikely]] faults::pause(f, 1);
    *lk = Locked{off, sc, root};
    return true;
  }
  return false;  // SMOs kept changing the tree under us: the structure path always succeeds
}

bool FastFairTree::put_leaf(Key k, const SearchKey& s, Value v, PutMode mode, Status* out) {
  Locked lk;
  if (!lock_leaf(s, &lk)) return false;
  NodeRef leaf = ref(lk.off);
  NodeRef::Scan sc = lk.sc;
  if (sc.at >= 0) {
    if (mode == PutMode::insert) {
      *out = Status::exists;
    } else {
      // Commit of upsert / update: the value word, non-temporal (no reader sees it before it
      // is durable); publish_nt in a values_are_blocks pool (the caller's block goes first).
      kit::commit_value_nt(pool_, &leaf.rec()[sc.at].ptr, v);
      *out = Status::ok;
    }
    unlock_leaf(lk.off);
    return true;
  }
  if (mode == PutMode::update) {
    *out = Status::not_found;
    unlock_leaf(lk.off);
    return true;
  }
  // At most one dead slot: the previous one goes before this commit (the scan found it;
  // a node without one is not read again).
  if (compact(leaf, sc)) sc = leaf.scan(s, kr_);
  const unsigned end = sc.end;
  if (end >= slots_) {  // a split: the structure path redoes the write
    unlock_leaf(lk.off);
    return false;
  }
  std::uint64_t word = 0;
  if (Status st = make_key_word(k, &word); st != Status::ok) {
    *out = st;
    unlock_leaf(lk.off);
    return true;
  }
  // In a values_are_blocks pool the value names a block the caller has just written back:
  // the commit's leading fence (fast_insert's, always there) orders it, like a key block's.
  fast_insert(leaf, end, sc.pos, word, v,
              is_indirect(word) || pool_.values_are_blocks());
  unlock_leaf(lk.off);
  *out = Status::ok;
  return true;
}

bool FastFairTree::remove_leaf(const SearchKey& s, Status* out) {
  Locked lk;
  if (!lock_leaf(s, &lk)) return false;
  NodeRef leaf = ref(lk.off);
  NodeRef::Scan sc = lk.sc;
  if (sc.at < 0) {
    *out = Status::not_found;
    unlock_leaf(lk.off);
    return true;
  }
  // A leaf left below half (not the root) rebalances: the structure path redoes the write.
  const unsigned live = sc.end - (sc.dead >= 0 ? 1u : 0u);
  if (!lk.root && live <= slots_ / 2) {
    unlock_leaf(lk.off);
    return false;
  }
  // At most one dead slot per node: the previous one (a delete's, or a crashed insert's:
  // Witcher bug 4, whose deleted key survived in it) is squeezed out before this commit.
  if (compact(leaf, sc)) sc = leaf.scan(s, kr_);
  const unsigned i = static_cast<unsigned>(sc.at);
  const std::uint64_t word = leaf.rec()[i].key;
  fast_remove(leaf, sc.end, i);
  unlock_leaf(lk.off);
  if (is_indirect(word)) retire(word & kOffsetMask);  // its unlink is durable
  *out = Status::ok;
  return true;
}

// --- the structure path ---------------------------------------------------------------
//
// Lock order: the structure lock, then leaf locks in any order. A leaf-path writer holds
// at most one leaf lock and waits for nothing while it holds it (it waits for an SMO to
// end, in smo_quiet, before it locks; it unlocks before it takes the structure lock), so
// the SMO's waits for leaf locks always end, and there is one SMO at a time.

void FastFairTree::begin_smo() {
  smo_.lock();
  // An RMW (a full barrier): the odd sequence is visible before any store of this SMO.
  smo_seq_.fetch_add(1, std::memory_order_seq_cst);
}

void FastFairTree::end_smo() {
  for (const Held& h : held_) kit::gen_unlock(&node(h.off)->h.spare, gen_, h.dead);
  held_.clear();
  smo_seq_.fetch_add(1, std::memory_order_release);
  smo_.unlock();
}

void FastFairTree::hold(std::uint64_t off) {
  for (const Held& h : held_)
    if (h.off == off) return;
  // Reached from the root under the structure lock: linked, so never obsolete.
  const bool locked = kit::gen_lock(&node(off)->h.spare, gen_);
  WORT_DCHECK(locked);
  (void)locked;
  held_.push_back(Held{off, false});
}

void FastFairTree::retire_node(std::uint64_t off) {
  for (Held& h : held_)
    if (h.off == off) h.dead = true;
  retire(off);
}

Status FastFairTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status FastFairTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status FastFairTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

Status FastFairTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  const SearchKey s = SearchKey::of(k);
  Status st = Status::ok;
  {
    kit::EpochReclaimer::Pin pin(epochs_);
    if (!put_leaf(k, s, v, mode, &st)) {
      begin_smo();
      st = put_smo(k, v, mode);
      end_smo();
    }
  }
  epochs_.reclaim();
  return st;
}

Status FastFairTree::remove(Key k) {
  const SearchKey s = SearchKey::of(k);
  Status st = Status::ok;
  {
    kit::EpochReclaimer::Pin pin(epochs_);
    if (!remove_leaf(s, &st)) {
      begin_smo();
      st = remove_smo(k);
      end_smo();
    }
  }
  epochs_.reclaim();
  return st;
}

// The single-writer code, under the structure lock (the leaves it reads or changes locked
// by descend(), rebalance_pair() and fresh_node()).
Status FastFairTree::put_smo(Key k, Value v, PutMode mode) {
  const SearchKey s = SearchKey::of(k);
  bool link = false;
  for (unsigned attempt = 0;; ++attempt) {
    // Each restart follows a repair; a crash leaves a few transient states per level, so
    // a long run of restarts means a damaged tree, not one to loop on.
    if (attempt > kMaxRestarts) return Status::corrupt;
    Path path;
    Status err = Status::ok;
    const Descent d = descend(s, 0, path, err, link);
    if (d == Descent::error) return err;
    if (d == Descent::restart) continue;
    NodeRef leaf = ref(path.at[0]);
    if (repair_cut(leaf)) continue;  // a cut may hand the key to the sibling
    if (const int i = leaf.find(s, kr_); i >= 0) {
      if (mode == PutMode::insert) return Status::exists;
      // Commit of upsert / update: the value word, non-temporal (no reader sees it before it
      // is durable); publish_nt in a values_are_blocks pool (the caller's block goes first).
      kit::commit_value_nt(pool_, &leaf.rec()[i].ptr, v);
      return Status::ok;
    }
    if (mode == PutMode::update) return Status::not_found;
    if (path.moved_right) {  // the insert may split: the path must be the parents'
      link = true;
      continue;
    }
    Reserve res;
    if (Status st = plan(path, 0, res); st == Status::exists) {
      continue;
    } else if (st != Status::ok) {
      return st;
    }
    std::uint64_t word = 0;
    if (Status st = make_key_word(k, &word); st != Status::ok) {
      release(res);
      return st;
    }
    // In a values_are_blocks pool the value names a block the caller has just written back:
    // the commit must fence first, like a key block's.
    insert_up(path, 0, word, v, &s, is_indirect(word) || pool_.values_are_blocks(), res);
    release(res);
    return Status::ok;
  }
}

Status FastFairTree::remove_smo(Key k) {
  const SearchKey s = SearchKey::of(k);
  bool link = false;
  for (unsigned attempt = 0;; ++attempt) {
    if (attempt > kMaxRestarts) return Status::corrupt;
    Path path;
    Status err = Status::ok;
    const Descent d = descend(s, 0, path, err, link);
    if (d == Descent::error) return err;
    if (d == Descent::restart) continue;
    NodeRef leaf = ref(path.at[0]);
    if (repair_cut(leaf)) continue;
    int i = leaf.find(s, kr_);
    if (i < 0) return Status::not_found;
    if (path.moved_right) {  // the remove may rebalance: the path must be the parents'
      link = true;
      continue;
    }
    // An uncut inner node on the path (a crash between an inner merge's append and its
    // unlink, or a split's link and cut) stops the rebalance (it leaves an uncut parent as
    // it is: its stores would follow this remove's commit), and a descent that is never
    // beyond its keys never cuts it, so a tree emptied by removes could keep it for good
    // (crash test DRAIN). Cut it before this remove's commit, and start again.
    bool cut = false;
    for (unsigned l = 1; l <= path.height && !cut; ++l) cut = repair_cut(ref(path.at[l]));
    if (cut) continue;
    // At most one dead slot per node: the previous one (a delete's, or a crashed insert's:
    // Witcher bug 4, whose deleted key survived in it) is squeezed out before this commit.
    if (compact(leaf)) i = leaf.find(s, kr_);
    const std::uint64_t word = leaf.rec()[i].key;
    fast_remove(leaf, leaf.end(), static_cast<unsigned>(i));
    if (is_indirect(word)) retire(word & kOffsetMask);  // its unlink is durable
    rebalance(path, 0);
    return Status::ok;
  }
}

}  // namespace wort
