// Small pools hold keys in proportion to their size, and a full pool can always be emptied:
// for every registered persistent index, pools of 1, 2, 4 and 8 MiB are filled with mixed
// keys until an insert answers out_of_space (which must leave the index as it was), then
// every key is removed — each remove must succeed — and the pool is filled again.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"

namespace wort {
namespace {

using kittest::key_of;

struct Fill {
  std::size_t held = 0;  //!< keys inserted before the first out_of_space
};

//! Inserts keys until out_of_space; checks the failed insert changed nothing.
Fill fill(Index& ix, const std::vector<std::string>& keys) {
  Fill f;
  for (const std::string& k : keys) {
    const Status s = ix.insert(key_of(k), f.held + 1);
    if (s == Status::out_of_space) {
      EXPECT_FALSE(ix.lookup(key_of(k)).has_value()) << "a failed insert left its key";
      break;
    }
    EXPECT_EQ(s, Status::ok);
    if (s != Status::ok) break;
    ++f.held;
  }
  return f;
}

void expect_sound(Pool& pool, Index& ix, std::size_t keys) {
  auto v = ix.verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(ix.stats().keys, keys);
  kittest::expect_audit_clean(pool, ix);
}

class SmallPool : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallPool, HoldsKeysInProportionAndAFullPoolEmptiesAndRefills) {
  const std::string kind = GetParam();
  const auto keys = kittest::mixed_keys(400000);
  std::map<unsigned, std::size_t> held;  // MiB -> keys
  for (unsigned mib : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE(kind + " in a " + std::to_string(mib) + " MiB pool");
    PoolOptions o;
    o.size = std::uint64_t{mib} << 20;
    o.kind = kind;
    auto pool = Pool::create_in_memory(o);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    auto ix = Index::create(**pool, kind);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    const Fill f = fill(**ix, keys);
    ASSERT_LT(f.held, keys.size()) << "the pool never filled up";
    held[mib] = f.held;
    expect_sound(**pool, **ix, f.held);
    // Deleting is how a user makes room in a full store: it must always work.
    for (std::size_t i = 0; i < f.held; ++i)
      ASSERT_EQ((*ix)->remove(key_of(keys[i])), Status::ok) << "remove " << i << " of " << f.held;
    expect_sound(**pool, **ix, 0);
    const Fill again = fill(**ix, keys);
    EXPECT_GE(again.held, f.held * 9 / 10) << "space freed by the removes was not reused";
    expect_sound(**pool, **ix, again.held);
  }
  std::printf("%s keys held:", kind.c_str());
  for (auto [mib, n] : held) std::printf("  %u MiB %zu (%.0f/MiB)", mib, n, double(n) / mib);
  std::printf("\n");
  // In proportion: a 1 MiB pool holds at least a third of the 8 MiB pool's keys per MiB (the
  // fixed costs — header, chunk table, anchor, remove's reserve — weigh most in the smallest).
  EXPECT_GT(held[1], 0u);
  EXPECT_GE(held[1] * 8 * 3, held[8]) << "a 1 MiB pool holds too few keys";
  EXPECT_GE(held[2] * 4 * 2, held[8]);
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, SmallPool,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
