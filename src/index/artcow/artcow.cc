#include "index/artcow/artcow.h"

#include "index/artcommon/art_tree_impl.h"
#include "index/registry.h"

namespace wort::artcommon {
template class ArtTree<artcow::ArtCowFlavor>;
}  // namespace wort::artcommon

namespace wort::artcow {
static_assert(IndexConcept<ArtCow>);
WORT_REGISTER_INDEX(ArtCow);
}  // namespace wort::artcow
