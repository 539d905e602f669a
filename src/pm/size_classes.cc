#include "pm/size_classes.h"

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
  lookup_.resize(sizes_.back() / kGranule + 1);
  std::size_t c = 0;
  for (std::size_t g = 0; g < lookup_.size(); ++g) {
    while (sizes_[c] < g * kGranule) ++c;
    lookup_[g] = static_cast<std::uint8_t>(c);
  }
}

}  // namespace wort::pm
