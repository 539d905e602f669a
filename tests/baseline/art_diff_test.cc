// What only the volatile ART does: it registers as not persistent, keeps nothing in its pool
// and cannot be opened again. Its differential tests (every key generator, the paper's
// sets) are the conformance suite's (tests/conformance/differential_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "baseline/art/art_tree.h"
#include "wort/pool.h"

namespace wort::art {
namespace {

TEST(ArtIndex, RegisteredAndVolatile) {
  const auto kinds = Index::kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "art"), kinds.end());
  PoolOptions o;
  o.size = 4ull << 20;
  o.kind = "art";
  auto pool = Pool::create_in_memory(o);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  auto ix = Index::create(**pool, "art");
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  ASSERT_EQ((*ix)->insert(as_key("k"), 1), Status::ok);
  EXPECT_EQ((*pool)->root(), 0u);  // nothing lives in the pool
  auto reopened = VolatileArt::open(**pool);
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status(), Status::invalid_argument);
  const IndexStats s = (*ix)->stats();
  EXPECT_EQ(s.pm_bytes, 0u);
  EXPECT_GT(s.dram_bytes, 0u);
}

}  // namespace
}  // namespace wort::art
