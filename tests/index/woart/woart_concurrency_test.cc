// woart under concurrent use: the engine's concurrency tests (tests/support/art_concurrency.h)
// on Woart. Also built and run by the ThreadSanitizer build (WORT_TSAN=ON).
#include "index/woart/woart.h"
#include "support/art_concurrency.h"
#include "index/art_engine/art_engine_writers.h"

namespace wort::test {
INSTANTIATE_TYPED_TEST_SUITE_P(woart, PmartConcurrency, ::testing::Types<woart::Woart>);
INSTANTIATE_TYPED_TEST_SUITE_P(woart, PmartWriters, ::testing::Types<woart::Woart>);
}  // namespace wort::test
