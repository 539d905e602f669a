// The ART engine's fresh leaves, for Woart (tests/unit/art_fresh.h says what is checked).
#include "index/woart/woart.h"
#include "unit/art_fresh.h"

namespace wort::test {
namespace {

WORT_ART_FRESH_TESTS(WoartFresh, woart::Woart)

}  // namespace
}  // namespace wort::test
