// One index handle per Pool: for every registered persistent index, while a handle from
// Index::create or Index::open lives, a second Index::open (or create) on the same Pool
// fails with invalid_argument and changes nothing; once the handle is gone, open works.
// Before this, a second open succeeded and ran recovery under the first handle's writers
// (FPTree's and NV-Tree's handles then kept different DRAM inner nodes of one tree: the
// session-18 audit).
#include <gtest/gtest.h>

#include "kit/kit_support.h"

namespace wort {
namespace {

using kittest::key_of;

class OneHandle : public ::testing::TestWithParam<std::string> {};

TEST_P(OneHandle, ASecondOpenOfTheSamePoolIsRefusedUntilTheFirstHandleIsGone) {
  const std::string kind = GetParam();
  kittest::TempPath path(kind + "-onehandle");
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = kind;
  auto pool = Pool::create(path.str(), o);
  ASSERT_TRUE(pool) << pool.error().message;
  {
    auto a = Index::create(**pool, kind);
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_EQ((*a)->insert(key_of("k1"), 1), Status::ok);
    auto b = Index::open(**pool);
    ASSERT_FALSE(b) << "a second handle opened beside the first";
    EXPECT_EQ(b.error().code, Status::invalid_argument) << b.error().message;
    // The first handle is unharmed and still the only one.
    ASSERT_EQ((*a)->insert(key_of("k2"), 2), Status::ok);
    EXPECT_EQ((*a)->lookup(key_of("k1")), std::optional<Value>(1));
    EXPECT_FALSE(Index::open(**pool));
  }
  for (int round = 0; round < 2; ++round) {  // the handle gone: open works, once at a time
    auto c = Index::open(**pool);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ((*c)->lookup(key_of("k2")), std::optional<Value>(2));
    EXPECT_FALSE(Index::open(**pool));
  }
  // Another Pool object is another claim (a second pool file, or the same file reopened
  // after this one closes): only one handle per Pool object is enforced here; the file
  // lock keeps a second Pool of the same file out.
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, OneHandle,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
