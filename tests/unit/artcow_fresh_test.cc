// The ART engine's fresh leaves, for ArtCow (tests/unit/art_fresh.h says what is checked).
#include "index/artcow/artcow.h"
#include "unit/art_fresh.h"

namespace wort::test {
namespace {

using Tree = artcow::ArtCow;

TEST(ArtCowFresh, NoMarkIsLeftOnceAnInsertReturns) {
  art_fresh::no_mark_is_left_once_an_insert_returns<Tree>();
}
TEST(ArtCowFresh, ReadersHelpAMarkedLeafThenClearIt) {
  art_fresh::readers_help_a_marked_leaf_then_clear_it<Tree>();
}
TEST(ArtCowFresh, AMissOnAMarkedLeafDoesNotHelp) {
  art_fresh::a_miss_on_a_marked_leaf_does_not_help<Tree>();
}
TEST(ArtCowFresh, AnEarlierSessionsMarkIsClearedWithoutHelp) {
  art_fresh::an_earlier_sessions_mark_is_cleared_without_help<Tree>();
}
#if WORT_FAULTS
TEST(ArtCowFresh, BrokenReaderDoesNotHelp) { art_fresh::broken_reader_does_not_help<Tree>(); }
#endif

}  // namespace
}  // namespace wort::test
