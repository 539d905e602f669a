// artcommon/node_image.h — building fresh nodes. A node is assembled in a DRAM image, then
// copied into its fresh (unreachable) pool block, storing and writing back only the cache
// lines whose bytes differ from the image (pm::copy_changed: a block of a never-used chunk
// reads zero, so the empty slots' lines cost nothing). The caller fences before publishing
// it (usually inside the commit, shared with other flushes).
#pragma once

#include <cstddef>
#include <cstring>

#include "index/artcommon/art_layout.h"
#include "pm/persist.h"

namespace wort::artcommon {

//! Fills the common base of a node image.
inline void init_base(NodeBase& b, NodeType type, const NodeHeader& hdr, Ref eok) noexcept {
  b = NodeBase{};
  b.hdr = hdr;
  b.type = type;
  b.eok = eok;
}

//! Copies a finished image into a fresh block and writes back the lines that changed (no
//! fence).
inline void publish_image(void* dst, const void* image, std::size_t n) noexcept {
  pm::copy_changed(dst, image, n);
}

//! Writes back two small ranges, the shared cache line once (a second flush of a line with
//! nothing new is a wasted write-back).
inline void flush_pair(const void* a, std::size_t la, const void* b, std::size_t lb) noexcept {
  const auto line = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) / pm::kCacheLine; };
  const auto last = [](const void* p, std::size_t l) {
    return (reinterpret_cast<std::uintptr_t>(p) + l - 1) / pm::kCacheLine;
  };
  if (line(a) == line(b) && last(a, la) == last(b, lb)) {
    pm::flush(a, la);
    return;
  }
  pm::flush(a, la);
  pm::flush(b, lb);
}

}  // namespace wort::artcommon
