#include "index/woart/woart.h"

#include "index/artcommon/art_tree_impl.h"
#include "index/registry.h"

namespace wort::artcommon {
template class ArtTree<woart::WoartFlavor>;
}  // namespace wort::artcommon

namespace wort::woart {
static_assert(IndexConcept<Woart>);
WORT_REGISTER_INDEX(Woart);
}  // namespace wort::woart
