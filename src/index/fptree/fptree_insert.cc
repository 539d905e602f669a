// FPTree insert, upsert and update (paper Alg. 2 and 8; App. C Alg. 14 and 16 for keys
// held in key blocks).
//
// A new pair goes into a free slot: key word, value, fingerprint (and the slot's inline bit)
// are written and written back, then ONE bitmap store makes it visible (pm::publish: a
// fence, then the commit). An update writes the new pair into another free slot the same
// way and its bitmap store sets the new bit and clears the old one at once; the key block,
// if any, is shared by both slots (the old slot is dead from the commit on and only live
// slots are ever followed, so nothing needs resetting afterwards). A full leaf is split
// first (fptree_split.cc).
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "index/fptree/fptree_tree.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort {

using namespace fptree_index;

namespace {

//! Bytes [off, off + len) of a leaf lie in its first cache line, the bitmap's: stores there
//! reach PM no later than the bitmap commit that follows them (one line persists in store
//! order), so the commit's own write-back covers them (the paper's §5 remark on micro-logs).
bool in_bitmap_line(std::uint32_t off, std::uint32_t len) { return off + len <= 64; }

}  // namespace

// An 8-byte key is its own key word (inline bit set); any other length goes to a new key
// block, written back here and fenced by the commit's pm::publish.
Status FPTree::make_key_word(Key k, std::uint64_t* word, bool* inline_key) {
  WORT_DCHECK(k.size() <= kMaxKeyLength);  // put() rejects longer keys
  if (k.size() == 8) {
    std::memcpy(word, k.data(), 8);
    *inline_key = true;
    return Status::ok;
  }
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(sizeof(KeyBlock) + k.size(), &off); s != Status::ok)
    return s;
  auto* kb = pool_.at<KeyBlock>(off);
  const KeyBlock head{k.size()};
  pm::copy(kb, &head, sizeof head);
  if (!k.empty()) pm::copy(kb + 1, k.data(), k.size());
  pm::flush(kb, sizeof(KeyBlock) + k.size());
  *word = off;
  *inline_key = false;
  return Status::ok;
}

void FPTree::drop_key_word(std::uint64_t word, bool inline_key) noexcept {
  if (!inline_key) pool_.allocator().free(word);
}

// Writes slot s of l (free: its bit is clear) and writes back what does not share the
// bitmap's line; no fence. Returns whether it flushed anything.
bool FPTree::write_slot(LeafRef l, int s, std::uint64_t key_word, bool inline_key, Value v,
                        std::uint8_t fp) noexcept {
  // A free slot of this leaf (its bit clear: the bitmap commit that follows makes it live).
  WORT_DCHECK(s >= 0 && static_cast<std::uint32_t>(s) < l.geometry().capacity);
  WORT_DCHECK(((l.bitmap() >> s) & 1) == 0);
  // A key block is a 16-aligned block of the pool, never offset 0.
  WORT_DCHECK(inline_key || (key_word != 0 && key_word % 16 == 0));
  bool flushed = false;
  const LeafGeometry& g = l.geometry();
  Slot* slot = l.slot(s);
  pm::store(&slot->key, key_word);
  pm::store(&slot->value, v);
  if (!in_bitmap_line(g.slots_off + 16 * static_cast<std::uint32_t>(s), 16)) {
    pm::flush(slot, sizeof(Slot));
    flushed = true;
  }
  const std::uint64_t bit = std::uint64_t{1} << s;
  const std::uint64_t im = *l.inline_word();
  if (((im & bit) != 0) != inline_key) {
    pm::store(l.inline_word(), inline_key ? (im | bit) : (im & ~bit));
    if (!in_bitmap_line(g.inline_off, 8)) {
      pm::flush(l.inline_word(), 8);
      flushed = true;
    }
  }
  pm::store(&l.fingerprints()[s], fp);
  if (!in_bitmap_line(LeafGeometry::kFingerprintOff + static_cast<std::uint32_t>(s), 1)) {
    pm::flush(&l.fingerprints()[s], 1);
    flushed = true;
  }
  return flushed;
}

// After the pin ends, what no pinned thread can hold any more is freed (inner nodes and
// separators a split replaced, here or in an earlier write that found readers pinned), as
// remove() does: otherwise a workload of sets under readers would keep them until a delete.
Status FPTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  Status s;
  {
    kit::EpochReclaimer::Pin pin(epochs_);  // the leaf may be unlinked under us: never freed
    s = put_pinned(k, v, mode);
  }
  epochs_.reclaim();
  return s;
}

// Under the leaf's lock (Alg. 2 / 8, concurrent form): the leaf was routed to optimistically
// and is still k's leaf once locked (lock_leaf). A full leaf is split under a split log of
// its own (claim_log: splits of different leaves run in parallel), then the parent update
// takes the structure lock as a second step after the commit, as the paper's second
// transaction; readers of the leaf (and of the new one) wait for the writer's section,
// which ends after the commit is durable.
Status FPTree::put_pinned(Key k, Value v, PutMode mode) {
  const std::uint8_t fp = fp_of(k);
  std::uint64_t off = 0;
  while (!lock_leaf(k, &off)) [[unlikely]] {  // an empty tree: its first leaf
    if (mode == PutMode::update) return Status::not_found;
    if (const std::optional<Status> s = put_if_empty(k, v)) return *s;
  }
  LeafRef l = leaf(off);
  const int old = l.find(k, fp);
  if ((old != kNoSlot && mode == PutMode::insert) || (old == kNoSlot && mode == PutMode::update)) {
    unlock_leaf(off);
    return old != kNoSlot ? Status::exists : Status::not_found;
  }
  // Alg. 16: an update reuses the key word (and key block) of the slot it replaces.
  std::uint64_t word = 0;
  bool inl = false;
  bool wrote_back_since_fence = false;  // a key block or a split's log reset awaits a fence
  if (old != kNoSlot) {
    word = l.slot(old)->key;
    inl = l.is_inline(old);
  } else if (Status s = make_key_word(k, &word, &inl); s != Status::ok) {
    unlock_leaf(off);
    return s;
  } else {
    wrote_back_since_fence = !inl;
  }
  SplitPut sp;
  if (l.full()) {
    if (Status s = split_for_put(&l, k, &sp); s != Status::ok) {
      unlock_leaf(off);
      if (old == kNoSlot) drop_key_word(word, inl);
      return s;
    }
    wrote_back_since_fence = true;  // the log's reset
  } else {
    leaf_begin(off);
  }
  const int s = l.first_free();
  const bool flushed = write_slot(l, s, word, inl, v, fp);
  std::uint64_t bits = l.bitmap() | (std::uint64_t{1} << s);
  if (old != kNoSlot) bits &= ~(std::uint64_t{1} << old);
  // The commit (Alg. 2:15, Alg. 8:19). Its leading fence orders the slot's write-back, a new
  // key block, or a split's log reset; with none of these (everything in the bitmap's line)
  // the plain commit suffices — except in a pool whose values name blocks, where the caller
  // wrote back the value's block and our leading fence orders it (kit::commit_value).
  if (flushed || wrote_back_since_fence || pool_.values_are_blocks())
    pm::publish(l.bitmap_word(), bits);
  else
    pm::commit(l.bitmap_word(), bits);
  if (sp.right != 0) {
    finish_split_put(off, &sp);
    return Status::ok;
  }
  leaf_end(off);
  unlock_leaf(off);
  return Status::ok;
}

// The structure lock's empty-tree case of put_pinned: nullopt if the tree is not empty any
// more (another writer made the first leaf: the caller routes again), else the put's status.
std::optional<Status> FPTree::put_if_empty(Key k, Value v) {
  smo_.lock();
  if (!inner_.empty()) {
    smo_.unlock();
    return std::nullopt;
  }
  std::uint64_t word = 0;
  bool inl = false;
  Status s = make_key_word(k, &word, &inl);
  if (s == Status::ok) s = put_first_leaf(k, v, word, inl);
  smo_.unlock();
  return s;
}

// put_pinned's leaf *l, locked and full, is split under a split log of its own (the log,
// the new leaf and the separator in *sp; a failed split releases the log); then *l is the
// half k belongs in (slots keep their index in both halves).
Status FPTree::split_for_put(LeafRef* l, Key k, SplitPut* sp) {
  WORT_DCHECK(l->full() && sp->right == 0);
#if WORT_FAULTS
  if (serialise_splits_) sp->serial = std::unique_lock<std::mutex>(serial_);
#endif
  sp->log = claim_log();
  if (Status s = split_leaf(*l, sp->log, &sp->right, &sp->sep); s != Status::ok) {
    release_log(sp->log);
    return s;
  }
  if (compare_keys(k, as_key(sp->sep)) >= 0) *l = leaf(sp->right);
  return Status::ok;
}

// After the commit of a put that split leaf `off`: the split's log is released (its reset
// is durable: the commit's leading fence), then the second step, under the structure lock:
// the parent learns of the new leaf (readers routed to the old leaf for a key now in the
// new one fail their validation of the parent, or wait). Both leaves are unlocked.
void FPTree::finish_split_put(std::uint64_t off, SplitPut* sp) {
  WORT_DCHECK(sp->right != 0 && sp->right != off);  // split_for_put split off
  release_log(sp->log);
  smo_.lock();
  Path path;
  const std::uint64_t at = inner_.find(as_key(sp->sep), &path);
  (void)at;
  WORT_DCHECK(at == off);
  inner_.insert_after(path, std::move(sp->sep), sp->right);
  leaf_end(sp->right);
  leaf_end(off);
  unlock_leaf(sp->right);
  unlock_leaf(off);
  smo_.unlock();
}

// The first key of an empty tree: a new leaf holding it, published by the anchor's head.
Status FPTree::put_first_leaf(Key k, Value v, std::uint64_t word, bool inl) {
  WORT_DCHECK(inner_.empty() && anchor_->head == 0);  // the tree is empty
  WORT_DCHECK(inl == (k.size() == 8));
  std::uint64_t off = 0;
  if (Status s = new_leaf(&off); s != Status::ok) {
    drop_key_word(word, inl);
    return s;
  }
  std::vector<std::byte> image(geo_.slots_off + sizeof(Slot), std::byte{0});
  auto put64 = [&](std::uint32_t at, std::uint64_t x) { std::memcpy(image.data() + at, &x, 8); };
  put64(LeafGeometry::kBitmapOff, 1);
  put64(geo_.inline_off, inl ? 1 : 0);
  image[LeafGeometry::kFingerprintOff] = static_cast<std::byte>(fp_of(k));
  put64(geo_.slots_off, word);
  put64(geo_.slots_off + 8, v);
  pm::copy(pool_.at<std::byte>(off), image.data(), image.size());
  pm::flush(pool_.at<std::byte>(off), image.size());
  pm::publish(&anchor_->head, off);  // the commit
  inner_.reset_to(off);
  return Status::ok;
}

}  // namespace wort
