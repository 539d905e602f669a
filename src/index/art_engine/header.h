// art_engine/header.h — building and repairing the 8-byte node header.
//
// Depth-based repair (WORT §3.4, used by WOART): an in-place path-compression split or
// merge rewrites a node's header with one 8-byte store before the parent's pointer is
// swapped. A crash between the two leaves a node whose stored depth differs from the depth
// its position in the tree implies. Its branch position (depth + prefix length) is the same
// before and after the rewrite, so the true header is recomputed from that position, the
// expected depth and the key bytes of any leaf below the node.
#pragma once

#include "index/art_engine/art_layout.h"
#include "wort/key.h"

namespace wort::art_engine {

//! Header for a node at `depth` with a `prefix_len`-byte compressed path whose bytes are
//! witness[depth, depth + prefix_len) (witness: the key of any leaf below the node).
NodeHeader make_header(unsigned depth, unsigned prefix_len, Key witness) noexcept;

//! True if a header reached at `expected_depth` is stale (an interrupted split or merge).
inline bool header_is_stale(const NodeHeader& h, unsigned expected_depth) noexcept {
  return h.depth != expected_depth;
}

//! The header a stale node should have at `expected_depth`; false if no consistent header
//! exists (the branch position lies above the expected depth: corruption, not a crash).
bool repaired_header(const NodeHeader& stale, unsigned expected_depth, Key witness,
                     NodeHeader* out) noexcept;

}  // namespace wort::art_engine
