// woart/woart.h — WOART, the Write Optimal Adaptive Radix Tree (Lee et al., FAST 2017,
// §3.5): ART's four node types made failure-atomic with 8-byte commit stores, and WORT's
// depth-carrying header for path compression. See README.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "index/art_engine/art_tree.h"
#include "index/woart/woart_node16.h"
#include "index/woart/woart_node4.h"

namespace wort::woart {

struct WoartFlavor {
  static constexpr std::string_view kKind = "woart";
  static constexpr std::uint64_t kAnchorMagic = 0x574f4152545f7631ull;  // "WOART_v1"
  using Node4 = Node4Ops;
  using Node16 = Node16Ops;
  static constexpr bool kDepthRepair = true;  //!< splits/merges rewrite headers in place
};

//! The concrete index class (IndexConcept).
using Woart = art_engine::ArtEngine<WoartFlavor>;

}  // namespace wort::woart
