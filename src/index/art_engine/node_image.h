// art_engine/node_image.h — building fresh nodes. A node is assembled in a DRAM image, then
// copied into its fresh (unreachable) pool block, storing and writing back only the cache
// lines whose bytes differ from the image (pm::copy_changed: a block of a never-used chunk
// reads zero, so the empty slots' lines cost nothing). The caller fences before publishing
// it (usually inside the commit, shared with other flushes).
#pragma once

#include <cstddef>
#include <cstring>

#include "index/art_engine/art_layout.h"
#include "pm/persist.h"

namespace wort::art_engine {

//! Fills the common base of a node image.
inline void init_base(NodeBase& b, NodeType type, const NodeHeader& hdr, Ref eok) noexcept {
  b = NodeBase{};
  b.hdr = hdr;
  b.type = type;
  b.eok = eok;
}

//! Copies a finished image into a fresh block and writes back the lines that changed (no
//! fence).
inline void write_image(void* dst, const void* image, std::size_t n) noexcept {
  pm::copy_changed(dst, image, n);
}

}  // namespace wort::art_engine
