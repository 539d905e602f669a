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
  EXPECT_EQ(fill_failed, 0) << "sets of 100 B refused while the pool holds 100 B items";
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
    EXPECT_EQ(failed, 0) << size << " B sets refused";
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
