// The ART engine's fresh leaves, for Woart (tests/index/art_engine/art_fresh.h says what is checked).
#include "index/woart/woart.h"
#include "index/art_engine/art_fresh.h"

namespace wort::test {
namespace {

WORT_ART_FRESH_TESTS(WoartFresh, woart::Woart)

}  // namespace
}  // namespace wort::test
