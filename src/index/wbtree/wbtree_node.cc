#include "index/wbtree/wbtree_node.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "pm/check.h"
#include "pm/persist.h"

namespace wort::wbtree {

namespace {

//! Rewrites the slot array as `v` (only the 8-byte words that change) and flushes its line
//! if a word changed. Returns whether it did. The slot array already reads as `v` only when
//! a crash interrupted the same node write after its slot rewrite and before its bitmap
//! store, and the write is now redone (split redo at open, or the next write of that
//! node): those bytes are durable (a crash image; every earlier write of this operation to
//! the line was flushed), so writing them back again is a redundant write-back.
bool write_slots(Node* n, const View& v) noexcept {
  alignas(8) std::uint8_t image[64] = {};
  image[0] = static_cast<std::uint8_t>(v.n);
  for (unsigned i = 0; i < v.n; ++i) image[1 + i] = v.pos[i];
  auto* words = reinterpret_cast<std::uint64_t*>(n->slot);
  const auto* want = reinterpret_cast<const std::uint64_t*>(image);
  bool changed = false;
  for (unsigned w = 0; w < 8; ++w)
    if (words[w] != want[w]) {
      pm::store(&words[w], want[w]);
      changed = true;
    }
  if (changed) pm::flush(n->slot, sizeof(n->slot));
  return changed;
}

//! The bitmap store that ends a node write. `pending`: a write-back was issued since the
//! last fence (the slot array's), so the store must be ordered after it; otherwise
//! everything the store depends on is already fenced and the fence is left out.
void finish(Node* n, std::uint64_t bits, Finish how, bool pending) noexcept {
  if (how == Finish::commit) {
    if (pending) pm::publish(&n->bitmap, bits);
    else pm::commit(&n->bitmap, bits);
  } else {
    if (pending) pm::fence();
    pm::store_persist(&n->bitmap, bits);
  }
}

//! Clears the slot-valid bit and flushes it (the caller fences before the slot array is
//! rewritten). Returns whether it stored: a bit already clear (a crash left it so, and the
//! image is durable) needs neither the store nor its write-back.
bool invalidate_slots(Node* n) noexcept {
  if (!(n->bitmap & kSlotsValid)) return false;  // already invalid: a crash left it so
  pm::store(&n->bitmap, n->bitmap & ~kSlotsValid);
  pm::flush(&n->bitmap, sizeof(n->bitmap));
  return true;
}

//! Steps 1-2 of a node write that adds an entry: `e` into the lowest free position
//! (invisible: its bit is clear), flushed; the slot-valid bit cleared, flushed; fence.
//! Returns the position.
unsigned stage_entry(Node* n, const Entry& e) noexcept {
  // A long key's block is a 16-aligned pool block; an inner entry names a 64-aligned node.
  WORT_DCHECK(e.meta <= kMaxInline || (e.meta != 0 && e.meta % 16 == 0));
  WORT_DCHECK(n->level == 0 || (e.value != 0 && e.value % 64 == 0));
  const std::uint64_t used = n->bitmap & ~kSlotsValid;
  const unsigned pos = static_cast<unsigned>(__builtin_ctzll(~used));
  WORT_DCHECK(pos < n->capacity);
  Entry* dst = &n->entries()[pos];  // invisible until its bit is set
  pm::store(&dst->prefix, e.prefix);
  pm::store(&dst->meta, e.meta);
  pm::store(&dst->value, e.value);
  pm::flush(dst, sizeof(Entry));
  invalidate_slots(n);
  pm::fence();  // entry and invalidation durable before the slot array changes
  return pos;
}

}  // namespace

View sorted_view(const std::byte* base, const Node* n) noexcept {
  View v;
  if (n->bitmap & kSlotsValid) {
    v.n = n->slot[0];
    std::memcpy(v.pos, n->slot + 1, v.n);
    return v;
  }
  std::uint64_t bits = n->bitmap & ~kSlotsValid;
  while (bits) {
    v.pos[v.n++] = static_cast<std::uint8_t>(__builtin_ctzll(bits));
    bits &= bits - 1;
  }
  const Entry* e = n->entries();
  std::sort(v.pos, v.pos + v.n,
            [&](std::uint8_t a, std::uint8_t b) { return compare(base, e[a], e[b]) < 0; });
  return v;
}

unsigned lower_bound(const std::byte* base, const Node* n, const View& v, const Probe& p) noexcept {
  unsigned lo = 0, hi = v.n;
  const Entry* e = n->entries();
  while (lo < hi) {
    const unsigned mid = (lo + hi) / 2;
    if (compare(base, e[v.pos[mid]], p) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

unsigned route(const std::byte* base, const Node* n, const View& v, const Probe& p) noexcept {
  assert(v.n > 0);
  unsigned lo = 1, hi = v.n;  // the first entry is minus infinity
  const Entry* e = n->entries();
  while (lo < hi) {  // first index >= 1 whose key is > p
    const unsigned mid = (lo + hi) / 2;
    if (compare(base, e[v.pos[mid]], p) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

void init_node(Node* n, std::uint32_t level, std::uint32_t capacity, const Entry* sorted,
               unsigned count) noexcept {
  WORT_DCHECK(count <= capacity && capacity <= kMaxCapacity);
  WORT_DCHECK(reinterpret_cast<std::uintptr_t>(n) % 64 == 0);  // fresh node block
  Node h{};
  h.level = level;
  h.capacity = capacity;
  h.bitmap = kSlotsValid | ((1ull << count) - 1);
  h.slot[0] = static_cast<std::uint8_t>(count);
  for (unsigned i = 0; i < count; ++i) h.slot[1 + i] = static_cast<std::uint8_t>(i);
  pm::copy(n, &h, sizeof(Node));
  if (count) pm::copy(n->entries(), sorted, count * sizeof(Entry));
  pm::flush(n, node_bytes(count));
}

void insert_entry(Node* n, const View& v, unsigned at, const Entry& e, Finish how) noexcept {
  // v is n's current view, with room for one more entry.
  WORT_DCHECK(v.n == count_of(n) && v.n < n->capacity && at <= v.n);
  const std::uint64_t used = n->bitmap & ~kSlotsValid;
  const unsigned pos = stage_entry(n, e);
  View w;
  w.n = v.n + 1;
  std::memcpy(w.pos, v.pos, at);
  w.pos[at] = static_cast<std::uint8_t>(pos);
  std::memcpy(w.pos + at + 1, v.pos + at, v.n - at);
  const bool pending = write_slots(n, w);
  finish(n, used | (1ull << pos) | kSlotsValid, how, pending);
}

void replace_entry(Node* n, const View& v, unsigned at, const Entry& e, Finish how) noexcept {
  // v is n's current view, with room for one more entry (the new one, until the store).
  WORT_DCHECK(v.n == count_of(n) && v.n < n->capacity && at < v.n);
  const std::uint64_t used = n->bitmap & ~kSlotsValid;
  const unsigned old = v.pos[at];
  const unsigned pos = stage_entry(n, e);
  View w = v;
  w.pos[at] = static_cast<std::uint8_t>(pos);
  const bool pending = write_slots(n, w);
  finish(n, (used & ~(1ull << old)) | (1ull << pos) | kSlotsValid, how, pending);
}

void remove_entry(Node* n, const View& v, unsigned at, Finish how) noexcept {
  // A node never loses its last entry: unlink_chain unlinks the node instead.
  WORT_DCHECK(v.n == count_of(n) && at < v.n && v.n >= 2);
  const std::uint64_t used = n->bitmap & ~kSlotsValid;
  const unsigned pos = v.pos[at];
  if (invalidate_slots(n)) pm::fence();  // nothing to order if the bit was already clear
  View w;
  w.n = v.n - 1;
  std::memcpy(w.pos, v.pos, at);
  std::memcpy(w.pos + at, v.pos + at + 1, v.n - at - 1);
  const bool pending = write_slots(n, w);
  finish(n, (used & ~(1ull << pos)) | kSlotsValid, how, pending);
}

void truncate_entries(Node* n, const View& v, unsigned keep) noexcept {
  WORT_DCHECK(v.n == count_of(n) && keep <= v.n);
  std::uint64_t bits = n->bitmap & ~kSlotsValid;
  for (unsigned i = keep; i < v.n; ++i) bits &= ~(1ull << v.pos[i]);
  pm::store_persist(&n->bitmap, bits);  // the dropped entries vanish; slot array invalid
  View w;
  w.n = keep;
  std::memcpy(w.pos, v.pos, keep);
  const bool pending = write_slots(n, w);
  finish(n, bits | kSlotsValid, Finish::structural, pending);
}

}  // namespace wort::wbtree
