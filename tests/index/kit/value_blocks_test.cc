// Pools whose values name blocks (PoolOptions::values_are_blocks: `wort serve` keeps its
// items so): for every registered persistent index, each key's value is a pool block the
// test wrote; overwrites and removes free the replaced block, as the server does. The pool is
// then reopened from its file without a clean close (the allocator traces every reopened
// pool), and every value block must be intact and kept by the trace (audit clean; fresh
// allocations never land on a live one). NV-Tree's open crashed on such a pool (the trace's
// value scan ran before its DRAM inner nodes were rebuilt) until this was checked here.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <set>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {
namespace {

using kittest::key_of;

constexpr std::size_t kBlock = 32;

//! The 32 bytes a value block for stamp s holds.
std::array<std::uint64_t, 4> content_of(std::uint64_t s) {
  return {s, ~s, s * 0x9e3779b97f4a7c15ull, s ^ 0x5555555555555555ull};
}

//! A new block holding content_of(stamp), written back and fenced (the test is no crash test).
std::uint64_t make_value(Pool& pool, std::uint64_t stamp) {
  std::uint64_t off = 0;
  EXPECT_EQ(pool.allocator().allocate(kBlock, &off), Status::ok);
  const auto c = content_of(stamp);
  pm::copy(pool.at<std::byte>(off), c.data(), sizeof c);
  pm::persist(pool.at<std::byte>(off), sizeof c);
  return off;
}

bool holds(const Pool& pool, std::uint64_t off, std::uint64_t stamp) {
  const auto c = content_of(stamp);
  return pool.contains(off, kBlock) && std::memcmp(pool.at<std::byte>(off), c.data(), kBlock) == 0;
}

pm::AuditReport audit(Pool& pool, const Index& ix) {
  return pool.allocator().audit([&](pm::BlockVisitor v) -> Result<void> {
    if (auto r = ix.visit_blocks(v); !r) return r;
    ix.scan(Key{}, SIZE_MAX, [&](Key, Value off) {
      v(off);
      return true;
    });
    return {};
  });
}

class ValueBlocks : public ::testing::TestWithParam<std::string> {};

TEST_P(ValueBlocks, SurviveReopenAndTheTraceKeepsThem) {
  const std::string kind = GetParam();
  kittest::TempPath path("values-" + kind);
  const auto keys = kittest::mixed_keys(3000);
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> want;  // key -> (off, stamp)
  {
    PoolOptions o;
    o.size = 32ull << 20;
    o.kind = kind;
    o.values_are_blocks = true;
    auto pool = Pool::create(path.str(), o);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    auto ix = Index::create(**pool, kind);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    std::uint64_t stamp = 1;
    for (const auto& k : keys) {
      const std::uint64_t off = make_value(**pool, stamp);
      ASSERT_EQ((*ix)->insert(key_of(k), off), Status::ok);
      want[k] = {off, stamp++};
    }
    for (std::size_t i = 0; i < keys.size(); i += 3) {  // overwrite: free the replaced block
      const std::uint64_t off = make_value(**pool, stamp);
      ASSERT_EQ((*ix)->upsert(key_of(keys[i]), off), Status::ok);
      (*pool)->allocator().free(want[keys[i]].first);
      want[keys[i]] = {off, stamp++};
    }
    for (std::size_t i = 1; i < keys.size(); i += 5) {  // remove: free the value's block
      ASSERT_EQ((*ix)->remove(key_of(keys[i])), Status::ok);
      (*pool)->allocator().free(want[keys[i]].first);
      want.erase(keys[i]);
    }
    const auto a = audit(**pool, **ix);
    ASSERT_TRUE(a.ok()) << "before reopen: " << a.describe();
    // Closed as a process exit leaves it; the reopen traces as after any crash.
  }
  auto pool = Pool::open(path.str());
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  ASSERT_TRUE((*pool)->values_are_blocks());
  auto ix = Index::open(**pool);
  ASSERT_TRUE(ix.ok()) << ix.error().message;
  ASSERT_TRUE((*ix)->verify().ok());
  std::set<std::uint64_t> live;
  for (const auto& [k, v] : want) {
    const auto got = (*ix)->lookup(key_of(k));
    ASSERT_TRUE(got.has_value()) << "lost key of size " << k.size();
    ASSERT_EQ(*got, v.first);
    ASSERT_TRUE(holds(**pool, v.first, v.second)) << "value block changed";
    live.insert(v.first);
  }
  EXPECT_EQ((*ix)->stats().keys, want.size());
  const auto a = audit(**pool, **ix);
  EXPECT_TRUE(a.ok()) << "after reopen: " << a.describe();
  // The trace kept every value block: new allocations land elsewhere.
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t off = 0;
    ASSERT_EQ((*pool)->allocator().allocate(kBlock, &off), Status::ok);
    ASSERT_EQ(live.count(off), 0u) << "a live value block was handed out again";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, ValueBlocks,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
