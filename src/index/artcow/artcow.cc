#include "index/artcow/artcow.h"

#include "index/art_engine/art_tree_impl.h"
#include "index/registry.h"

namespace wort::art_engine {
template class ArtEngine<artcow::ArtCowFlavor>;
}  // namespace wort::art_engine

namespace wort::artcow {
static_assert(IndexConcept<ArtCow>);
WORT_REGISTER_INDEX(ArtCow);
}  // namespace wort::artcow
