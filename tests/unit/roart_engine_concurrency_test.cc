// roart under the ART engine's concurrency tests (tests/unit/pmart_concurrency.h: readers
// scanning and looking up while writers split, grow, shrink and merge nodes; the single-key
// check; a scan visitor that calls back into the tree), beside ROART's own
// (roart_concurrency_test.cc). Since ROART moved onto kit::EpochReclaimer a scan holds a
// nestable pin: with its former one-word pin a lookup inside a visitor ended the scan's pin,
// so blocks the scan was still walking could be freed. Also built and run by the
// ThreadSanitizer build (WORT_TSAN=ON).
#include "index/roart/roart_tree.h"
#include "unit/pmart_concurrency.h"

namespace wort::test {

// What this instantiation found in ROART (issue 12). (1) Mended: a lock-free lookup in a leaf
// array re-read the slot after matching its leaf, so a writer that removed the key and put
// another key's leaf in that slot meanwhile made the lookup return that key's value (about 1
// run of ChurnOfRemovedAndReinsertedKeys in 15; find_in_array now hands back the leaf it
// matched). (2) Not mended: after two writers remove and re-insert keys concurrently, about
// 1 run in 150 ends with verify() reporting "volatile count != entries" — a node's DRAM entry
// count lost an update. Skipped, with this reason, until it is fixed.
template <>
struct KnownChurnRace<roart::Roart> {
  static constexpr const char* kWhy =
      "roart: concurrent remove/re-insert can leave a node's volatile count wrong (verify: "
      "\"volatile count != entries\", ~1 run in 150; issue 12, open)";
};

INSTANTIATE_TYPED_TEST_SUITE_P(roart, PmartConcurrency, ::testing::Types<roart::Roart>);
}  // namespace wort::test
