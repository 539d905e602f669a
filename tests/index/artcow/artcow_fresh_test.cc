// The ART engine's fresh leaves, for ArtCow (tests/index/art_engine/art_fresh.h says what is checked).
#include "index/artcow/artcow.h"
#include "index/art_engine/art_fresh.h"

namespace wort::test {
namespace {

WORT_ART_FRESH_TESTS(ArtCowFresh, artcow::ArtCow)

}  // namespace
}  // namespace wort::test
