// artcow/artcow.h — ART+CoW (Lee et al., FAST 2017, §3.6): ART whose NODE4/NODE16 are
// copied on every change and whose path-compression splits and merges copy the node too;
// NODE48 as in WOART, NODE256 as in WORT. See README.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "index/art_engine/art_tree.h"
#include "index/artcow/artcow_node16.h"
#include "index/artcow/artcow_node4.h"

namespace wort::artcow {

struct ArtCowFlavor {
  static constexpr std::string_view kKind = "artcow";
  static constexpr std::uint64_t kAnchorMagic = 0x4152544352575f31ull;  // "ARTCOW_1"
  using Node4 = Node4Ops;
  using Node16 = Node16Ops;
  static constexpr bool kDepthRepair = false;  //!< splits/merges copy the node
};

//! The concrete index class (IndexConcept).
using ArtCow = art_engine::ArtEngine<ArtCowFlavor>;

}  // namespace wort::artcow
