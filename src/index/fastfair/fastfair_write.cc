// FAST&FAIR writers: insert / upsert / update / remove, FAIR splits (Algorithm 2), the
// atomic root split, and the lazy repairs of §5.2 (a dead slot, an uncut split, a sibling
// missing from its parent).
//
// Every insert reserves the blocks it may need (one node per full level on its path, three
// for a root split, separator copies, the key block) before its first pool store, so
// out_of_space changes nothing.
#include <cstring>

#include "index/common/anchor.h"
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
  if (faults::active & faults::skip_dead_repair) [[unlikely]] return false;
  if (!repair_dead(nr)) return false;
  ++repairs_.dead_slots;
  return true;
}

// An uncut split (crash between the sibling link and the cut: this node still holds
// copies of its sibling's first records; also a merge or borrow between append and
// unlink). Algorithm 1, line 2: a writer compares with its sibling's first key. Returns
// the slot to cut at, or -1. Reads only.
int FastFairTree::uncut_at(NodeRef nr) const {
  const std::uint64_t sib = nr.n->h.sibling;
  if (sib == 0) return -1;
  const std::uint64_t first = ref(sib).first_key();
  const std::uint64_t last = nr.last_key();
  if (first == kEmpty || last == kEmpty || kr_.compare_words(first, last) > 0) return -1;
  const unsigned end = nr.end();
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
    if (repair_cut(nr)) {
      release(res);
      return Status::exists;
    }
    compact(nr);
    if (nr.end() < slots_) break;
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
  retire(off_of(nr.n));  // its key blocks now belong to *a1 and *b
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
  auto put_into = [&](std::uint64_t off, bool unf) {
    NodeRef t = ref(off);
    const unsigned end = t.end();
    const unsigned pos = s ? t.lower_bound(*s, kr_, end) : word_position(t, kr_, key, end);
    // The user's key is not in the leaf already (put() found no live record for it).
    WORT_DCHECK(!s || pos == end || kr_.compare(*s, t.rec()[pos].key) < 0);
    fast_insert(t, end, pos, key, ptr, unf);
  };
  for (;;) {
    NodeRef nr = ref(path.at[level]);
    if (nr.end() < slots_) {
      put_into(path.at[level], unfenced);
      return;
    }
    std::uint64_t sep = 0;
    if (level == path.height) {
      std::uint64_t a1 = 0, b = 0;
      const std::uint64_t sep_copy = res.seps[sep_i];
      res.seps[sep_i++] = 0;  // now owned by the new root's record
      split_root(nr, res, sep_copy, &a1, &b, &sep);
      put_into(kr_.compare_words(key, sep) < 0 ? a1 : b, false);
      return;
    }
    WORT_DCHECK(res.next_node < res.nodes.size() && sep_i < res.seps.size());
    const std::uint64_t boff = res.nodes[res.next_node++];
    if (split(nr, boff, &sep) == 0) return;  // faults::stop_after_link (tests)
    put_into(kr_.compare_words(key, sep) < 0 ? path.at[level] : boff, false);
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

Status FastFairTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
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

Status FastFairTree::remove_locked(Key k) {
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
