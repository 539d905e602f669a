// roart under the ART engine's concurrency tests (tests/support/art_concurrency.h: readers
// scanning and looking up while writers split, grow, shrink and merge nodes; the single-key
// check; a scan visitor that calls back into the tree), beside ROART's own
// (roart_concurrency_test.cc). Since ROART moved onto kit::EpochReclaimer a scan holds a
// nestable pin: with its former one-word pin a lookup inside a visitor ended the scan's pin,
// so blocks the scan was still walking could be freed. Also built and run by the
// ThreadSanitizer build (WORT_TSAN=ON).
#include "index/roart/roart_tree.h"
#include "support/art_concurrency.h"

namespace wort::test {

// What this instantiation found in ROART, both mended: (1) a lock-free lookup in
// a leaf array re-read the slot after matching its leaf, so a writer that removed the key and
// put another key's leaf in that slot meanwhile made the lookup return that key's value
// (about 1 run of ChurnOfRemovedAndReinsertedKeys in 15; find_in_array now hands back the
// leaf it matched). (2) A write that went down to a child which a concurrent remove then
// took out of its node read the emptied slot as an empty tree and published its new child
// there — without the node's count update (verify: "volatile count N != N+1 entries", the
// root NODE256 in the failing run; ~1 run in 250 on a quiet machine, rarely under load).
// put_once now restarts on an empty slot below the anchor.

INSTANTIATE_TYPED_TEST_SUITE_P(roart, PmartConcurrency, ::testing::Types<roart::Roart>);
}  // namespace wort::test
