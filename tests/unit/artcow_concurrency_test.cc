// artcow under concurrent use: the engine's concurrency tests (tests/unit/pmart_concurrency.h)
// on ArtCow. Also built and run by the ThreadSanitizer build (WORT_TSAN=ON).
#include "index/artcow/artcow.h"
#include "unit/pmart_concurrency.h"
#include "unit/pmart_writers.h"

namespace wort::test {
INSTANTIATE_TYPED_TEST_SUITE_P(artcow, PmartConcurrency, ::testing::Types<artcow::ArtCow>);
INSTANTIATE_TYPED_TEST_SUITE_P(artcow, PmartWriters, ::testing::Types<artcow::ArtCow>);
}  // namespace wort::test
