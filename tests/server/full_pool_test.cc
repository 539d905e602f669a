// tests/server/full_pool_test.cc — the full pool, the normal state of a cache, through the
// Store API from 1, 2 and 4 threads (as `wort serve -t N` calls it), per servable index:
//   1. an 8 MiB pool is filled past full with 32-byte keys and 100 B values from all the
//      threads at once: no set is refused (a freed block in another thread's allocator
//      cache, or waiting for the epochs, is not a reason to refuse);
//   2. then sets of 1000 B values on new keys, then of 300 B values (sizes the pool holds
//      no item of): every one is stored, and the evictions they cause stay within twice
//      what the new items need (their bytes in 100 B items: a chunk of items is evicted and
//      the chunk moves to the new size, as memcached's slab rebalancer moves a page);
//   3. a set refused as too large (-I) evicts nothing;
// and the counters add up (curr + evicted + reclaimed = stored), every value read back is
// the one stored, verify() and the allocator audit are clean.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "server/server_store.h"

namespace wort::test {
namespace {

constexpr std::uint64_t kPoolMiB = 8;

std::string key32(char tag, int i) {
  char b[40];
  std::snprintf(b, sizeof b, "%c:%030d", tag, i);  // 32 bytes
  return b;
}

//! Runs fn(thread, i) for i in [0, n) split among `threads` threads; returns the count of
//! calls that returned false.
template <class F>
int run_split(int threads, int n, F fn) {
  std::atomic<int> failed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = t; i < n; i += threads)
        if (!fn(i)) failed.fetch_add(1, std::memory_order_relaxed);
    });
  for (auto& th : ts) th.join();
  return failed.load();
}

class FullPool : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(FullPool, StoresEveryNewSizeAndRefusesNothing) {
  const auto& [kind, threads] = GetParam();
  const std::string path = "/tmp/wort_full_pool_" + kind + "_" + std::to_string(threads) + "_" +
                           std::to_string(getpid()) + ".pool";
  std::filesystem::remove(path);
  StoreOptions o;
  o.pool_path = path;
  o.kind = kind;
  o.pool_bytes = kPoolMiB << 20;
  auto opened = Store::open(o);
  ASSERT_TRUE(bool(opened)) << opened.error().message;
  std::unique_ptr<Store> s = std::move(opened).value();
  const auto& c = s->counters();

  // 1. Past full with 100 B values: 1.25x what the pool would hold as bare 164-byte items
  // (about twice what it holds with the index).
  const std::string small(100, 's');
  const int fill = static_cast<int>((kPoolMiB << 20) * 5 / 4 / 164);
  const int fill_failed = run_split(threads, fill, [&](int i) {
    return s->store(StoreMode::set, key32('f', i), 0, 0, small) == StoreResult::stored;
  });
  // Where the refused sets were refused (cumulative).
  const auto refusals = [&c] {
    return " (by the budget " + std::to_string(c.refused_budget.load()) + ", the allocator " +
           std::to_string(c.refused_alloc.load()) + ", the index " +
           std::to_string(c.refused_index.load()) + ")";
  };
  EXPECT_EQ(fill_failed, 0) << "sets of 100 B refused while the pool holds 100 B items"
                            << refusals();
  ASSERT_GT(c.evictions.load(), 0u) << "the pool never filled: the test proves nothing";
  const std::uint64_t held = c.curr_items.load();

  // 2. New sizes on new keys.
  for (const std::size_t size : {std::size_t{1000}, std::size_t{300}}) {
    const std::string big(size, static_cast<char>('a' + size % 26));
    const char tag = size == 1000 ? 'K' : 'T';
    constexpr int kNew = 300;
    const std::uint64_t ev0 = c.evictions.load();
    std::atomic<int> wrong{0};
    const int failed = run_split(threads, kNew, [&](int i) {
      if (s->store(StoreMode::set, key32(tag, i), 0, 0, big) != StoreResult::stored) return false;
      // (another thread's eviction may take it at once: a miss is not wrong)
      s->get(key32(tag, i), [&](const server::ItemView& v) {
        if (v.value != big) wrong.fetch_add(1);
      });
      return true;
    });
    const std::uint64_t evicted = c.evictions.load() - ev0;
    // What the new items need, in 100 B items: their bytes over a 100 B item's.
    const std::uint64_t need =
        kNew * server::item_bytes(32, size) / server::item_bytes(32, small.size()) + 1;
    EXPECT_EQ(failed, 0) << size << " B sets refused" << refusals();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_LE(evicted, 2 * need) << size << " B: evictions against " << need << " needed";
    std::printf("%s -t %d: %d sets of 100 B (%d refused, %llu held), %d sets of %zu B: %d refused, "
                "%llu evictions (the new items' bytes are %llu items of 100 B)\n",
                kind.c_str(), threads, fill, fill_failed, static_cast<unsigned long long>(held),
                kNew, size, failed, static_cast<unsigned long long>(evicted),
                static_cast<unsigned long long>(need));
  }

  // 3. A set refused as too large evicts nothing.
  const std::uint64_t ev0 = c.evictions.load();
  EXPECT_EQ(s->store(StoreMode::set, key32('L', 0), 0, 0, std::string(o.max_item_size, 'l')),
            StoreResult::too_large);
  EXPECT_EQ(c.evictions.load(), ev0);

  EXPECT_EQ(c.curr_items.load() + c.evictions.load() + c.reclaimed.load(), c.total_items.load());
  auto v = s->verify();
  EXPECT_TRUE(bool(v)) << (v ? "" : v.error().message);
  const pm::AuditReport a = s->audit();
  EXPECT_TRUE(a.ok()) << a.describe();
  s.reset();
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, FullPool,
    ::testing::Combine(::testing::Values("wort", "woart", "artcow", "fastfair", "fptree",
                                         "wbtree", "nvtree", "roart"),
                       ::testing::Values(1, 2, 4)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_t" + std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace wort::test

namespace wort::test {
namespace {

//! `wort serve -m 64` as deployed: an item budget of 64 MiB in the pool pool_bytes_for
//! sizes for it (256 KiB chunks, as every -m from 64 up), two threads. Filled past full with
//! 100 B values, the budget, not the pool's room, bounds the items (it holds what -m holds:
//! its blocks fill the budget to within an evict-ahead batch), and 300 sets of 1000 B and
//! then 300 B on new keys are all stored with evictions within twice their bytes in 100 B
//! items. One ART and one B-tree (the others: `full_pool_client.py` against `wort serve`,
//! src/server/README.md).
class FullBudget : public ::testing::TestWithParam<std::string> {};

TEST_P(FullBudget, HoldsTheBudgetAndEvictsWhatNewSizesNeed) {
  const std::string kind = GetParam();
  const std::string path = "/tmp/wort_full_budget_" + kind + "_" + std::to_string(getpid()) + ".pool";
  std::filesystem::remove(path);
  StoreOptions o;
  o.pool_path = path;
  o.kind = kind;
  o.item_limit = 64ull << 20;
  o.pool_bytes = server::pool_bytes_for(kind, o.item_limit);
  auto opened = Store::open(o);
  ASSERT_TRUE(bool(opened)) << opened.error().message;
  std::unique_ptr<Store> s = std::move(opened).value();
  ASSERT_EQ(s->chunk_size(), 256u << 10) << "not the chunks of a -m 64 deployment";
  const auto& c = s->counters();
  const std::string small(100, 's');
  const std::uint64_t block = 176;  // a 164-byte item's apart block
  const int fill = static_cast<int>(o.item_limit / block * 11 / 10);
  EXPECT_EQ(run_split(2, fill, [&](int i) {
              return s->store(StoreMode::set, key32('f', i), 0, 0, small) == StoreResult::stored;
            }),
            0);
  const std::uint64_t held = c.curr_items.load();
  // Within an evict-ahead batch (32) and the two threads' sets in flight of the budget.
  EXPECT_GE(held, o.item_limit / block - 40) << "the pool ran out before the budget";
  EXPECT_LE(s->item_block_bytes(), o.item_limit);
  for (const std::size_t size : {std::size_t{1000}, std::size_t{300}}) {
    const std::string big(size, 'n');
    const char tag = size == 1000 ? 'K' : 'T';
    const std::uint64_t ev0 = c.evictions.load();
    EXPECT_EQ(run_split(2, 300, [&](int i) {
                return s->store(StoreMode::set, key32(tag, i), 0, 0, big) == StoreResult::stored;
              }),
              0)
        << size << " B sets refused";
    const std::uint64_t evicted = c.evictions.load() - ev0;
    const std::uint64_t need = 300 * server::item_bytes(32, size) / server::item_bytes(32, 100) + 1;
    EXPECT_LE(evicted, 2 * need) << size << " B: evictions against " << need << " needed";
    int back = 0;
    for (int i = 0; i < 300; ++i)
      back += s->get(key32(tag, i), [&](const server::ItemView& v) { EXPECT_EQ(v.value, big); });
    EXPECT_GE(back, 290) << "the new items evicted each other";
    std::printf("%s: %llu items of 100 B held, 300 sets of %zu B: %llu evictions (%llu needed), "
                "%d read back\n", kind.c_str(), static_cast<unsigned long long>(held), size,
                static_cast<unsigned long long>(evicted), static_cast<unsigned long long>(need),
                back);
  }
  EXPECT_EQ(c.curr_items.load() + c.evictions.load() + c.reclaimed.load(), c.total_items.load());
  auto v = s->verify();
  EXPECT_TRUE(bool(v)) << (v ? "" : v.error().message);
  EXPECT_TRUE(s->audit().ok());
  s.reset();
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Kinds, FullBudget, ::testing::Values("wort", "fastfair"));

//! The budget is the meta block's: a reopen keeps the one the pool was created with, and a
//! pool created without one (as before the budget existed: the word is zero) stays bounded
//! by its room only, whatever -m says at the reopen.
TEST(ItemBudget, KeptAcrossReopenAndAbsentInOlderPools) {
  const std::string path = "/tmp/wort_item_budget_" + std::to_string(getpid()) + ".pool";
  for (const std::uint64_t created : {std::uint64_t{2} << 20, std::uint64_t{0}}) {
    std::filesystem::remove(path);
    StoreOptions o;
    o.pool_path = path;
    o.item_limit = created;
    o.pool_bytes = 4u << 20;
    {
      auto s = Store::open(o);
      ASSERT_TRUE(bool(s)) << s.error().message;
      EXPECT_EQ((*s)->item_limit(), created ? created : (*s)->pool_bytes());
    }
    o.item_limit = 3u << 20;
    auto s = Store::open(o);
    ASSERT_TRUE(bool(s)) << s.error().message;
    ASSERT_TRUE((*s)->recovered());
    EXPECT_EQ((*s)->item_limit(), created ? created : (*s)->pool_bytes());
    // Filled past the budget: the item blocks stay within it (a pool without one: its room).
    const std::string v(100, 'v');
    for (int i = 0; i < 40000; ++i)
      ASSERT_EQ((*s)->store(StoreMode::set, key32('b', i), 0, 0, v), StoreResult::stored) << i;
    EXPECT_GT((*s)->counters().evictions.load(), 0u);
    EXPECT_LE((*s)->item_block_bytes(), (*s)->item_limit());
    if (created) EXPECT_GE((*s)->item_block_bytes(), created - 64 * 176);
  }
  std::filesystem::remove(path);
}

//! Where a full pool's bytes go, per kind (a measurement, skipped unless
//! WORT_SERVE_MEMORY_REPORT=1; src/server/README.md, "Items per megabyte"): a 64 MiB pool,
//! 600,000 sets of 32-byte keys and 100 B values from one thread, then per item: its
//! bytes, its block, and everything else the allocator holds (index nodes, the meta block,
//! the ballast) divided by the items held.
TEST(FullPoolMemory, PerItemOverhead) {
  if (std::getenv("WORT_SERVE_MEMORY_REPORT") == nullptr) GTEST_SKIP() << "a measurement";
  for (const char* kind : {"wort", "woart", "artcow", "fastfair", "fptree", "wbtree", "nvtree", "roart"}) {
    const std::string path = "/tmp/wort_full_pool_mem_" + std::string(kind) + "_" +
                             std::to_string(getpid()) + ".pool";
    std::filesystem::remove(path);
    StoreOptions o;
    o.pool_path = path;
    o.kind = kind;
    o.pool_bytes = 64ull << 20;
    auto opened = Store::open(o);
    ASSERT_TRUE(bool(opened)) << opened.error().message;
    std::unique_ptr<Store> s = std::move(opened).value();
    const std::string v(100, 'v');
    for (int i = 0; i < 600000; ++i) s->store(StoreMode::set, key32('f', i), 0, 0, v);
    const pm::AllocatorStats a = s->allocator_stats();
    const std::uint64_t items = s->counters().curr_items.load();
    const std::uint64_t item_bytes = server::item_bytes(32, 100);
    std::uint64_t block = 0;
    s->get(key32('f', 599999), [&](const server::ItemView&) {});
    s->meta_get(key32('f', 599999), server::MetaGetOptions{.block_info = true},
                [&](const server::ItemView& iv) {
                  block = iv.block_bytes;
                  return false;
                });
    const std::uint64_t ballast = 4 * s->chunk_size();  // store.cc, kBallastBlocks
    const std::uint64_t other = a.bytes_allocated - items * block - ballast;
    const std::uint64_t chunks_bytes = a.chunks_total * s->chunk_size();
    std::printf("%-8s items %7llu  per item: %llu B item, %llu B block, %5.1f B index (and "
                "the meta block), %4.1f B ballast; %5.1f%% of the chunks not allocated\n",
                kind, static_cast<unsigned long long>(items),
                static_cast<unsigned long long>(item_bytes), static_cast<unsigned long long>(block),
                static_cast<double>(other) / static_cast<double>(items),
                static_cast<double>(ballast) / static_cast<double>(items),
                100.0 * static_cast<double>(chunks_bytes - a.bytes_allocated) /
                    static_cast<double>(chunks_bytes));
    s.reset();
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace wort::test
