// artcow under concurrent use: the engine's concurrency tests (tests/support/art_concurrency.h)
// on ArtCow. Also built and run by the ThreadSanitizer build (WORT_TSAN=ON).
#include "index/artcow/artcow.h"
#include "support/art_concurrency.h"
#include "index/art_engine/art_engine_writers.h"

namespace wort::test {
INSTANTIATE_TYPED_TEST_SUITE_P(artcow, PmartConcurrency, ::testing::Types<artcow::ArtCow>);
INSTANTIATE_TYPED_TEST_SUITE_P(artcow, PmartWriters, ::testing::Types<artcow::ArtCow>);
}  // namespace wort::test
