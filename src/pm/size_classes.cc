#include "pm/size_classes.h"

#include <cassert>

namespace wort::pm {

SizeClasses::SizeClasses(std::uint64_t chunk_size) : chunk_size_(chunk_size) {
  const std::uint64_t limit = chunk_size / 4;
  for (std::uint32_t s : {16u, 32u, 48u, 64u})
    if (s <= limit) sizes_.push_back(s);
  std::uint64_t s = 64;
  for (;;) {
    // Grow by a quarter, rounded up to a multiple of 64 so every class >= 64 keeps blocks
    // 64-byte aligned inside a (4 KiB-aligned) chunk.
    s = (s + s / 4 + 63) / 64 * 64;
    if (s > limit) break;
    sizes_.push_back(static_cast<std::uint32_t>(s));
  }
  const std::uint32_t top = sizes_.back();
  // The apart classes: 48, 64, ..., 512 in steps of 16, then ~1/8 more per class (a
  // multiple of 16), ending at the same largest size.
  apart_first_ = sizes_.size();
  for (std::uint64_t a = 48; a < top;) {
    sizes_.push_back(static_cast<std::uint32_t>(a));
    a = a < 512 ? a + 16 : (a + a / 8 + 15) / 16 * 16;
  }
  sizes_.push_back(top);
  assert(sizes_.size() <= 255);  // a chunk-table entry names a class in 8 bits
  auto fill = [&](std::vector<std::uint8_t>& lookup, std::size_t from, std::size_t to) {
    lookup.resize(top / kGranule + 1);
    std::size_t c = from;
    for (std::size_t g = 0; g < lookup.size(); ++g) {
      while (c + 1 < to && sizes_[c] < g * kGranule) ++c;
      lookup[g] = static_cast<std::uint8_t>(c);
    }
  };
  fill(lookup_, 0, apart_first_);
  fill(apart_lookup_, apart_first_, sizes_.size());
}

}  // namespace wort::pm
