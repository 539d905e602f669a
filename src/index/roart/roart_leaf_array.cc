#include "index/roart/roart_leaf_array.h"

#include <bit>

#include "index/roart/roart_lock.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::roart {

unsigned array_cap_for(unsigned n) noexcept {
  for (unsigned c : kArrayCaps)
    if (n <= c) return c;
  return kArraySlots;
}

unsigned smaller_cap(unsigned cap) noexcept {
  unsigned prev = 0;
  for (unsigned c : kArrayCaps) {
    if (c == cap) return prev;
    prev = c;
  }
  return 0;
}

bool valid_array_cap(unsigned cap) noexcept {
  for (unsigned c : kArrayCaps)
    if (c == cap) return true;
  return false;
}

void build_array(LeafArray* dst, unsigned cap, const ArrayItem* items, unsigned n,
                 std::uint64_t gen) noexcept {
  WORT_DCHECK(valid_array_cap(cap) && n <= cap);
  WORT_DCHECK(dst != nullptr && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0);
  LeafArray img{};
  img.type = NodeType::leaf_array;
  img.cap = static_cast<std::uint8_t>(cap);
  img.generation.raw = gen;
  for (unsigned i = 0; i < n; ++i) {
    img.slot[i].raw = make_slot(items[i].fp, items[i].leaf);
    img.bitmap.raw |= std::uint64_t{1} << i;
  }
  pm::copy(dst, &img, array_bytes(cap));
  pm::flush(dst, array_bytes(cap));
}

void rebuild_array_meta(LeafArray* a, std::uint64_t gen) noexcept {
  std::uint64_t bits = 0;
  for (unsigned i = 0; i < a->cap; ++i)
    if (a->slot[i].get() != 0) bits |= std::uint64_t{1} << i;
  pm::store_volatile(&a->bitmap.raw, bits);
  pm::store_volatile_release(&a->generation.raw, gen);  // last (see rebuild_node_meta)
}

unsigned count_slots(const LeafArray* a) noexcept {
  unsigned n = 0;
  for (unsigned i = 0; i < a->cap; ++i) n += a->slot[i].get() != 0;
  return n;
}

unsigned array_items(const LeafArray* a, ArrayItem* out) noexcept {
  unsigned n = 0;
  for (unsigned i = 0; i < a->cap; ++i) {
    const LeafSlot s = a->slot[i].get();
    if (s != 0) out[n++] = {slot_fp(s), slot_leaf(s)};
  }
  return n;
}

namespace {
void set_bitmap(LeafArray* a, std::uint64_t bits, NodeFlags f) noexcept {
  if (f.selective_persist) {
    pm::store_volatile(&a->bitmap.raw, bits);
  } else {
    pm::store(&a->bitmap.raw, bits);
    pm::flush(&a->bitmap, sizeof bits);
  }
}
}  // namespace

bool add_to_array(LeafArray* a, std::uint16_t fp, std::uint64_t leaf, NodeFlags f) noexcept {
  WORT_DCHECK(a->type == NodeType::leaf_array && valid_array_cap(a->cap));
  // A leaf block: non-null, 16-aligned, within the slot's 48 bits.
  WORT_DCHECK(leaf != 0 && leaf % 16 == 0 && leaf <= kRefMask);
  WORT_DCHECK(lock_held(a->lock.get(), a->generation.get()));  // the writer holds the array
  const unsigned i = static_cast<unsigned>(std::countr_zero(~a->bitmap));
  if (i >= a->cap) return false;  // full (bits at and above cap are never set)
  set_bitmap(a, a->bitmap | (std::uint64_t{1} << i), f);
  pm::publish_nt(&a->slot[i].raw, make_slot(fp, leaf));
  return true;
}

void remove_from_array(LeafArray* a, unsigned i, NodeFlags f) noexcept {
  WORT_DCHECK(i < a->cap && a->slot[i].get() != 0 && ((a->bitmap.get() >> i) & 1) != 0);
  WORT_DCHECK(lock_held(a->lock.get(), a->generation.get()));
  if (f.selective_persist) {
    pm::commit_nt(&a->slot[i].raw, LeafSlot{0});
    pm::store_volatile(&a->bitmap.raw, a->bitmap & ~(std::uint64_t{1} << i));
    return;
  }
  // SMP off: the persisted bitmap first, written back under the commit's leading fence
  // (readers never read the bitmap; a crash between them: the rebuild recomputes it).
  set_bitmap(a, a->bitmap & ~(std::uint64_t{1} << i), f);
  pm::publish_nt(&a->slot[i].raw, LeafSlot{0});
}

}  // namespace wort::roart
