// pm/size_classes.h — the allocator's size classes, derived from the chunk size alone (so a
// reopened pool recomputes the same table; a chunk-table entry names its class by index).
//
//   16, 32, 48, 64, then multiples of 64 growing by ~25% per class (80 rounds up to 128,
//   then 160, 192, 240->256, 320, 400->448, ...) up to chunk_size / 4.
// Anything bigger is a "large" block: a span of whole chunks.
//
// After them come the "apart" classes (Allocator::allocate_apart: blocks that share chunks
// only with each other), at finer steps: multiples of 16 from 48 to 512, then growing by
// ~1/8 per class (multiples of 16) up to the same largest size. Their blocks are 16-byte
// aligned. A chunk-table entry names an apart class by its index after the ordinary ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wort::pm {

class SizeClasses {
 public:
  explicit SizeClasses(std::uint64_t chunk_size);

  //! Number of small classes (ordinary and apart).
  std::size_t count() const noexcept { return sizes_.size(); }
  //! Classes below this index are ordinary, the others apart.
  std::size_t apart_first() const noexcept { return apart_first_; }
  bool is_apart(std::size_t c) const noexcept { return c >= apart_first_; }
  //! Block size of class `c`.
  std::uint32_t size(std::size_t c) const noexcept { return sizes_[c]; }
  //! Largest small block; bigger requests are large spans.
  std::uint32_t max_small() const noexcept { return sizes_.back(); }
  //! Class for a request of 1..max_small() bytes.
  std::size_t class_of(std::size_t bytes) const noexcept {
    return lookup_[(bytes + kGranule - 1) / kGranule];
  }
  //! Apart class for a request of 1..max_small() bytes.
  std::size_t apart_class_of(std::size_t bytes) const noexcept {
    return apart_lookup_[(bytes + kGranule - 1) / kGranule];
  }
  //! Blocks per chunk for class `c`.
  std::uint32_t blocks_per_chunk(std::size_t c) const noexcept {
    return static_cast<std::uint32_t>(chunk_size_ / sizes_[c]);
  }

 private:
  static constexpr std::size_t kGranule = 16;
  std::uint64_t chunk_size_;
  std::vector<std::uint32_t> sizes_;
  std::size_t apart_first_ = 0;
  std::vector<std::uint8_t> lookup_;        // (bytes / 16, rounded up) -> class
  std::vector<std::uint8_t> apart_lookup_;  // the same for the apart classes
};

}  // namespace wort::pm
