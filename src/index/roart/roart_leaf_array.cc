#include "index/roart/roart_leaf_array.h"

#include <cassert>

#include "pm/persist.h"

namespace wort::roart {

void build_array(LeafArray* dst, const ArrayItem* items, unsigned n, std::uint64_t gen) noexcept {
  assert(n <= kArraySlots);
  LeafArray img{};
  img.type = NodeType::leaf_array;
  img.generation = gen;
  for (unsigned i = 0; i < n; ++i) {
    img.slot[i] = make_slot(items[i].fp, items[i].leaf);
    img.bitmap |= std::uint64_t{1} << i;
  }
  pm::copy(dst, &img, sizeof img);
  pm::flush(dst, sizeof img);
}

void rebuild_array_meta(LeafArray* a, std::uint64_t gen) noexcept {
  std::uint64_t bits = 0;
  for (unsigned i = 0; i < kArraySlots; ++i)
    if (a->slot[i] != 0) bits |= std::uint64_t{1} << i;
  pm::store_volatile(&a->bitmap, bits);
  pm::store_volatile(&a->lock, std::uint64_t{0});
  pm::store_volatile(&a->generation, gen);
}

unsigned count_slots(const LeafArray* a) noexcept {
  unsigned n = 0;
  for (unsigned i = 0; i < kArraySlots; ++i) n += a->slot[i] != 0;
  return n;
}

namespace {
void set_bitmap(LeafArray* a, std::uint64_t bits, NodeFlags f) noexcept {
  if (f.selective_persist) {
    pm::store_volatile(&a->bitmap, bits);
  } else {
    pm::store(&a->bitmap, bits);
    pm::flush(&a->bitmap, sizeof bits);
  }
}
}  // namespace

bool add_to_array(LeafArray* a, std::uint16_t fp, std::uint64_t leaf, NodeFlags f) noexcept {
  if (a->bitmap == ~std::uint64_t{0}) return false;
  const unsigned i = static_cast<unsigned>(__builtin_ctzll(~a->bitmap));
  set_bitmap(a, a->bitmap | (std::uint64_t{1} << i), f);
  pm::publish(&a->slot[i], make_slot(fp, leaf));
  return true;
}

void remove_from_array(LeafArray* a, unsigned i, NodeFlags f) noexcept {
  pm::commit(&a->slot[i], LeafSlot{0});
  set_bitmap(a, a->bitmap & ~(std::uint64_t{1} << i), f);
  if (!f.selective_persist) pm::fence();
}

}  // namespace wort::roart
