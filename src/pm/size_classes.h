// pm/size_classes.h — the allocator's size classes, derived from the chunk size alone (so a
// reopened pool recomputes the same table; a chunk-table entry names its class by index).
//
//   16, 32, 48, 64, then multiples of 64 growing by ~25% per class (80 rounds up to 128,
//   then 160, 192, 240->256, 320, 400->448, ...) up to chunk_size / 4.
// Anything bigger is a "large" block: a span of whole chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wort::pm {

class SizeClasses {
 public:
  explicit SizeClasses(std::uint64_t chunk_size);

  //! Number of small classes.
  std::size_t count() const noexcept { return sizes_.size(); }
  //! Block size of class `c`.
  std::uint32_t size(std::size_t c) const noexcept { return sizes_[c]; }
  //! Largest small block; bigger requests are large spans.
  std::uint32_t max_small() const noexcept { return sizes_.back(); }
  //! Class for a request of 1..max_small() bytes.
  std::size_t class_of(std::size_t bytes) const noexcept {
    return lookup_[(bytes + kGranule - 1) / kGranule];
  }
  //! Blocks per chunk for class `c`.
  std::uint32_t blocks_per_chunk(std::size_t c) const noexcept {
    return static_cast<std::uint32_t>(chunk_size_ / sizes_[c]);
  }

 private:
  static constexpr std::size_t kGranule = 16;
  std::uint64_t chunk_size_;
  std::vector<std::uint32_t> sizes_;
  std::vector<std::uint8_t> lookup_;  // (bytes / 16, rounded up) -> class
};

}  // namespace wort::pm
