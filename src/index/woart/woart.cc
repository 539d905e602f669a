#include "index/woart/woart.h"

#include "index/art_engine/art_tree_impl.h"
#include "index/registry.h"

namespace wort::art_engine {
template class ArtEngine<woart::WoartFlavor>;
}  // namespace wort::art_engine

namespace wort::woart {
static_assert(IndexConcept<Woart>);
WORT_REGISTER_INDEX(Woart);
}  // namespace wort::woart
