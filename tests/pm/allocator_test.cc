// Tests of the persistent allocator: size classes, alignment, reuse, exhaustion, large
// spans, threads, recovery by tracing, audit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "pm/allocator.h"
#include "pm/chunk_table.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "pm/size_classes.h"
#include "wort/pool.h"

namespace wort::pm {
namespace {

constexpr std::uint32_t kChunk = 16 << 10;

std::unique_ptr<Pool> make_pool(std::uint64_t size = 1 << 20, std::uint32_t chunk = kChunk) {
  PoolOptions o;
  o.size = size;
  o.chunk_size = chunk;
  o.kind = "test";
  auto r = Pool::create_in_memory(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return std::move(r).value();
}

//! Walker over a fixed list of offsets.
auto walk_list(const std::vector<std::uint64_t>& offs) {
  return [&offs](BlockVisitor v) -> Result<void> {
    for (std::uint64_t o : offs) v(o);
    return {};
  };
}

//! A crash image: a 64-byte aligned copy of a pool's bytes.
struct Image {
  explicit Image(const Pool& p) : size(p.size()) {
    mem = static_cast<std::byte*>(std::aligned_alloc(4096, size));
    std::memcpy(mem, p.base(), size);
  }
  ~Image() { std::free(mem); }
  std::span<std::byte> span() { return {mem, size}; }
  std::byte* mem;
  std::size_t size;
};

TEST(SizeClassesTest, ClassesGrowByAQuarterAndCoverEveryRequest) {
  for (std::uint64_t chunk : {4096ull, 16384ull, 65536ull, 1ull << 20}) {
    SizeClasses sc(chunk);
    ASSERT_GE(sc.count(), 4u);
    EXPECT_EQ(sc.size(0), 16u);
    EXPECT_EQ(sc.size(1), 32u);
    EXPECT_EQ(sc.size(2), 48u);
    EXPECT_EQ(sc.size(3), 64u);
    EXPECT_LE(sc.max_small(), chunk / 4);
    for (std::size_t c = 4; c < sc.apart_first(); ++c) {
      EXPECT_EQ(sc.size(c) % 64, 0u);
      EXPECT_GT(sc.size(c), sc.size(c - 1));
      // ~25% growth, rounded up to 64
      EXPECT_LE(sc.size(c), sc.size(c - 1) + sc.size(c - 1) / 4 + 64);
    }
    // The next class would not fit under chunk/4.
    const std::uint64_t last = sc.max_small();
    EXPECT_GT((last + last / 4 + 63) / 64 * 64, chunk / 4);
    for (std::size_t b = 1; b <= sc.max_small(); ++b) {
      const std::size_t c = sc.class_of(b);
      ASSERT_GE(sc.size(c), b) << b;
      if (c > 0) {
        ASSERT_LT(sc.size(c - 1), b) << b;  // the smallest class that fits
      }
    }
    // The apart classes: 16-byte steps from 48 to 512, then ~1/8 growth, the same top.
    ASSERT_LT(sc.apart_first(), sc.count());
    EXPECT_EQ(sc.size(sc.apart_first()), 48u);
    EXPECT_EQ(sc.size(sc.count() - 1), sc.max_small());
    for (std::size_t c = sc.apart_first() + 1; c < sc.count(); ++c) {
      EXPECT_EQ(sc.size(c) % 16, 0u);
      EXPECT_GT(sc.size(c), sc.size(c - 1));
      EXPECT_LE(sc.size(c), std::max<std::uint32_t>(sc.size(c - 1) + 16,
                                                    sc.size(c - 1) + sc.size(c - 1) / 8 + 16));
    }
    for (std::size_t b = 1; b <= sc.max_small(); ++b) {
      const std::size_t c = sc.apart_class_of(b);
      ASSERT_TRUE(sc.is_apart(c)) << b;
      ASSERT_GE(sc.size(c), b) << b;
      if (c > sc.apart_first()) {
        ASSERT_LT(sc.size(c - 1), b) << b;
      }
    }
  }
}

TEST(AllocatorTest, BlocksAreAlignedDisjointAndInsideThePool) {
  auto pool = make_pool(4 << 20);
  Allocator& a = pool->allocator();
  std::map<std::uint64_t, std::uint64_t> blocks;  // offset -> size
  std::mt19937_64 rng(1);
  for (int i = 0; i < 600; ++i) {
    const std::size_t bytes = 1 + rng() % 3000;
    std::uint64_t off;
    ASSERT_EQ(a.allocate(bytes, &off), Status::ok);
    const std::size_t bs = a.block_size(off);
    EXPECT_GE(bs, bytes);
    EXPECT_EQ(off % (bytes >= 64 ? 64 : 16), 0u) << bytes;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool->at<char>(off)) % (bytes >= 64 ? 64 : 16), 0u);
    EXPECT_TRUE(pool->contains(off, bs));
    blocks[off] = bs;
  }
  std::uint64_t end = 0;
  for (auto [off, bs] : blocks) {
    EXPECT_GE(off, end) << "blocks overlap";
    end = off + bs;
  }
  EXPECT_EQ(a.allocate(0, nullptr), Status::invalid_argument);
}

TEST(AllocatorTest, FreedBlockIsReused) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::uint64_t x, y, z;
  ASSERT_EQ(a.allocate(100, &x), Status::ok);
  ASSERT_EQ(a.allocate(100, &y), Status::ok);
  EXPECT_NE(x, y);
  a.free(x);
  ASSERT_EQ(a.allocate(90, &z), Status::ok);  // same class
  EXPECT_EQ(z, x);
  EXPECT_EQ(a.stats().blocks_allocated, 2u);
}

TEST(AllocatorTest, FastPathWritesNoPoolMemoryAndFlushesNothing) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::uint64_t warm;
  ASSERT_EQ(a.allocate(200, &warm), Status::ok);  // carves a chunk, fills this thread's cache
  a.free(warm);

  struct CountingTracer : Tracer {
    void on_store(void*, const void*, std::size_t) override { ++events; }
    void on_nt_store(void*, std::uint64_t) override { ++events; }
    void on_flush(const void*, std::size_t) override { ++events; }
    void on_fence() override { ++events; }
    int events = 0;
  } t;
  set_tracer(&t);
  reset_counters();
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t o;
    ASSERT_EQ(a.allocate(200, &o), Status::ok);
    a.free(o);
  }
  set_tracer(nullptr);
  EXPECT_EQ(t.events, 0);
  EXPECT_EQ(counters().flushes, 0u);
  EXPECT_EQ(counters().fences, 0u);
}

TEST(AllocatorTest, CarvingPersistsTheTableEntryBeforeTheHighWaterMark) {
  auto pool = make_pool();
  struct OrderTracer : Tracer {
    void on_store(void* dst, const void*, std::size_t) override { log.push_back({'s', dst}); }
    void on_nt_store(void* dst, std::uint64_t) override { log.push_back({'n', dst}); }
    void on_flush(const void* a, std::size_t) override { log.push_back({'f', a}); }
    void on_fence() override { log.push_back({'F', nullptr}); }
    std::vector<std::pair<char, const void*>> log;
  } t;
  set_tracer(&t);
  std::uint64_t o;
  ASSERT_EQ(pool->allocator().allocate(64, &o), Status::ok);
  set_tracer(nullptr);
  const void* entry = pool->base() + kHeaderSize;
  const void* hwm = &pool->header().chunk_hwm;
  ASSERT_EQ(t.log.size(), 6u);
  EXPECT_EQ(t.log[0], std::make_pair('s', entry));
  EXPECT_EQ(t.log[1], std::make_pair('f', entry));
  EXPECT_EQ(t.log[2].first, 'F');
  EXPECT_EQ(t.log[3], std::make_pair('s', hwm));
  EXPECT_EQ(t.log[4], std::make_pair('f', hwm));
  EXPECT_EQ(t.log[5].first, 'F');
  EXPECT_EQ(pool->header().chunk_hwm, 1u);
}

TEST(AllocatorTest, OutOfSpaceThenFreeAndAllocateAgain) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::vector<std::uint64_t> got;
  std::uint64_t o;
  Status s;
  while ((s = a.allocate(1000, &o)) == Status::ok) got.push_back(o);
  EXPECT_EQ(s, Status::out_of_space);
  const AllocatorStats full = a.stats();
  EXPECT_EQ(full.chunks_used, full.chunks_total);
  EXPECT_EQ(full.blocks_allocated, got.size());
  // Every chunk holds floor(chunk / class size) blocks.
  const std::size_t per_chunk = kChunk / a.block_size(got[0]);
  EXPECT_EQ(got.size(), per_chunk * full.chunks_total);
  // A failed allocation changed nothing (also for a large request).
  EXPECT_EQ(a.allocate(3 * kChunk, &o), Status::out_of_space);
  EXPECT_EQ(a.stats().blocks_allocated, full.blocks_allocated);
  EXPECT_EQ(pool->header().chunk_hwm, full.chunks_total);

  for (std::uint64_t x : got) a.free(x);
  EXPECT_EQ(a.stats().blocks_allocated, 0u);
  std::set<std::uint64_t> again;
  while (a.allocate(1000, &o) == Status::ok) again.insert(o);
  EXPECT_EQ(again, std::set<std::uint64_t>(got.begin(), got.end()));
}

TEST(AllocatorTest, FreedChunksServeOtherSizesAfterExhaustion) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  const std::uint64_t chunks = a.stats().chunks_total;
  std::vector<std::uint64_t> got;
  std::uint64_t o;
  while (a.allocate(1000, &o) == Status::ok) got.push_back(o);
  // Free all but one block: every chunk but one is wholly free again.
  for (std::size_t i = 1; i < got.size(); ++i) a.free(got[i]);
  // Another class gets those chunks back (the free blocks sat in this thread's cache and
  // the global list; the allocator drains and reclaims them when the pool is exhausted).
  std::vector<std::uint64_t> small;
  while (a.allocate(100, &o) == Status::ok) small.push_back(o);
  EXPECT_EQ(small.size(), (chunks - 1) * (kChunk / a.block_size(small[0])));
  for (std::uint64_t x : small) a.free(x);
  // And, merged, they serve a large span of all but the one busy chunk.
  std::uint64_t big;
  ASSERT_EQ(a.allocate((chunks - 1) * kChunk, &big), Status::ok);
  EXPECT_EQ(a.block_size(big), (chunks - 1) * kChunk);
  std::vector<std::uint64_t> live = {got[0], big};
  AuditReport rep = a.audit(walk_list(live));
  EXPECT_TRUE(rep.ok()) << rep.describe();
  // The persistent table stays consistent through all this: an image reopens and recovers.
  Image img(*pool);
  auto re = Pool::attach(img.span());
  ASSERT_TRUE(re.ok()) << re.error().message;
  ASSERT_TRUE((*re)->allocator().recover(walk_list(live)).ok());
  EXPECT_TRUE((*re)->allocator().audit(walk_list(live)).ok());
  EXPECT_EQ((*re)->allocator().block_size(big), (chunks - 1) * kChunk);
}

// Apart blocks (a cache's items) share chunks only with each other and sit in no thread
// cache; an evacuated apart chunk hands out nothing more and, with its last free, becomes a
// free chunk that another size class carves (memcached's slab rebalancing), durably.
TEST(AllocatorTest, ApartChunksEvacuateIntoFreeChunks) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  const std::uint64_t first = pool->header().first_chunk_offset;
  auto chunk_of = [&](std::uint64_t off) { return (off - first) / kChunk; };
  std::vector<std::uint64_t> apart, ordinary;
  std::uint64_t o;
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(a.allocate_apart(100, &o), Status::ok);
    EXPECT_EQ(o % 16, 0u);
    EXPECT_EQ(a.block_size(o), 112u);  // 16-byte steps (the ordinary class is 128)
    apart.push_back(o);
    ASSERT_EQ(a.allocate(100, &o), Status::ok);
    ordinary.push_back(o);
  }
  std::set<std::uint64_t> apart_chunks, ordinary_chunks;
  for (std::uint64_t x : apart) apart_chunks.insert(chunk_of(x));
  for (std::uint64_t x : ordinary) ordinary_chunks.insert(chunk_of(x));
  for (std::uint64_t c : apart_chunks) EXPECT_FALSE(ordinary_chunks.count(c)) << c;
  std::uint64_t span = 0;
  std::uint32_t live = 0;
  const std::uint64_t c0 = chunk_of(apart[0]);
  ASSERT_EQ(a.chunk_use(c0, &span, &live), Allocator::ChunkUse::apart);
  EXPECT_EQ(live, kChunk / 112);  // the first chunk is full
  EXPECT_EQ(a.chunk_use(chunk_of(ordinary[0]), &span, &live), Allocator::ChunkUse::other);
  EXPECT_FALSE(a.evacuate(ordinary[0]));
  // Free a block of c0 first: it must not be handed out again once c0 evacuates.
  a.free(apart[1]);
  ASSERT_TRUE(a.evacuate(apart[0]));
  EXPECT_FALSE(a.evacuate(apart[0]));  // once
  EXPECT_EQ(a.chunk_use(c0, &span, &live), Allocator::ChunkUse::evacuating);
  std::vector<std::uint64_t> more;
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(a.allocate_apart(100, &o), Status::ok);
    EXPECT_NE(chunk_of(o), c0);
    more.push_back(o);
  }
  std::vector<std::uint64_t> kept;
  for (std::size_t i = 0; i < apart.size(); ++i) {
    if (i == 1) continue;
    if (chunk_of(apart[i]) == c0) a.free(apart[i]);
    else kept.push_back(apart[i]);
  }
  ASSERT_EQ(a.chunk_use(c0, &span, &live), Allocator::ChunkUse::free);
  kept.insert(kept.end(), more.begin(), more.end());
  kept.insert(kept.end(), ordinary.begin(), ordinary.end());
  EXPECT_TRUE(a.audit(walk_list(kept)).ok());
  // The free chunk is durable: an image reopens with it free before its trace.
  Image img(*pool);
  auto re = Pool::attach(img.span());
  ASSERT_TRUE(re.ok()) << re.error().message;
  EXPECT_EQ((*re)->allocator().chunk_use(c0, &span, &live), Allocator::ChunkUse::free);
  ASSERT_TRUE((*re)->allocator().recover(walk_list(kept)).ok());
  EXPECT_TRUE((*re)->allocator().audit(walk_list(kept)).ok());
  // And another class carves it: the pool fills with 1000-byte blocks, c0 among them.
  bool reused = false;
  while (a.allocate(1000, &o) == Status::ok) reused |= chunk_of(o) == c0;
  EXPECT_TRUE(reused);
}

// A full pool answers out_of_space without rescanning its free lists at every attempt
// (a full `wort serve --index artcow` spent its time in that scan, ~85 sets/s):
// a scan that found nothing is repeated only after blocks came back to the global lists.
TEST(AllocatorTest, AFullPoolDoesNotRescanUntilSomethingIsFreed) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::vector<std::uint64_t> got;
  std::uint64_t o;
  while (a.allocate(1000, &o) == Status::ok) got.push_back(o);
  const std::uint64_t scans = a.stats().reclaim_scans;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(a.allocate(100, &o), Status::out_of_space);
    ASSERT_EQ(a.allocate(3 * kChunk, &o), Status::out_of_space);
  }
  EXPECT_LE(a.stats().reclaim_scans - scans, 2u) << "a scan per failed allocation";
  // Freeing a whole chunk's blocks (through the thread cache, drained at the next failure)
  // makes the next attempt scan again, and it succeeds.
  const std::uint64_t first = pool->header().first_chunk_offset;
  const std::uint64_t chunk0 = (got.front() - first) / kChunk;
  for (std::uint64_t x : got)
    if ((x - first) / kChunk == chunk0) a.free(x);
  EXPECT_EQ(a.allocate(100, &o), Status::ok);
}

TEST(AllocatorTest, LargeSpansAreWholeChunksAndAreReused) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::uint64_t big, small;
  ASSERT_EQ(a.allocate(3 * kChunk - 5, &big), Status::ok);
  EXPECT_EQ(a.block_size(big), 3u * kChunk);
  EXPECT_EQ((big - pool->header().first_chunk_offset) % kChunk, 0u);
  ASSERT_EQ(a.allocate(kChunk / 4 + 1, &small), Status::ok);  // just above the small classes
  EXPECT_EQ(a.block_size(small), kChunk);
  const std::uint64_t hwm = pool->header().chunk_hwm;
  EXPECT_EQ(hwm, 4u);
  std::memset(pool->at<char>(big), 0x5a, 3 * kChunk);  // the whole span is usable

  a.free(big);
  std::uint64_t two, one, unit;
  ASSERT_EQ(a.allocate(2 * kChunk, &two), Status::ok);  // splits the freed 3-chunk span
  EXPECT_EQ(two, big);
  ASSERT_EQ(a.allocate(kChunk, &one), Status::ok);  // takes the remainder
  EXPECT_EQ(one, big + 2 * kChunk);
  EXPECT_EQ(pool->header().chunk_hwm, hwm);  // nothing new carved
  a.free(one);
  ASSERT_EQ(a.allocate(64, &unit), Status::ok);  // a freed span can become a small chunk
  EXPECT_EQ(pool->header().chunk_hwm, hwm);
  EXPECT_EQ(unit, one);
  const auto st = a.stats();
  EXPECT_EQ(st.blocks_allocated, 3u);
  EXPECT_EQ(st.bytes_allocated, 2u * kChunk + kChunk + 64);
  EXPECT_EQ(st.bytes_requested, 2u * kChunk + (kChunk / 4 + 1) + 64);

  // The table survives a reopen (checked by Pool::attach) and recovery keeps the blocks.
  Image img(*pool);
  auto re = Pool::attach(img.span());
  ASSERT_TRUE(re.ok()) << re.error().message;
  std::vector<std::uint64_t> live{two, small, unit};
  ASSERT_TRUE((*re)->allocator().recover(walk_list(live)).ok());
  EXPECT_TRUE((*re)->allocator().audit(walk_list(live)).ok());
  EXPECT_EQ((*re)->allocator().block_size(two), 2u * kChunk);
}

TEST(AllocatorTest, ThreadsAllocateAndFreeConcurrently) {
  auto pool = make_pool(8 << 20, 64 << 10);
  Allocator& a = pool->allocator();
  constexpr int kThreads = 4;
  const int rounds = 20000;
  std::vector<std::vector<std::uint64_t>> kept(kThreads);
  std::vector<int> errors(kThreads, 0), failed(kThreads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<std::pair<std::uint64_t, std::size_t>> mine;
      for (int i = 0; i < rounds; ++i) {
        if (mine.empty() || (mine.size() < 2000 && rng() % 2 == 0)) {
          const std::size_t bytes = 8 + rng() % 500;
          std::uint64_t o;
          if (a.allocate(bytes, &o) != Status::ok) {
            ++failed[t];
            continue;
          }
          std::memset(pool->at<char>(o), 'A' + t, bytes);  // tag the block as ours
          mine.push_back({o, bytes});
        } else {
          const std::size_t k = rng() % mine.size();
          auto [o, bytes] = mine[k];
          const char* p = pool->at<char>(o);
          for (std::size_t j = 0; j < bytes; ++j)
            if (p[j] != 'A' + t) { ++errors[t]; break; }  // someone else got our block
          a.free(o);
          mine[k] = mine.back();
          mine.pop_back();
        }
      }
      for (auto [o, bytes] : mine) kept[t].push_back(o);
    });
  }
  for (auto& th : ts) th.join();
  std::vector<std::uint64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], 0) << "thread " << t << " found its block overwritten";
    EXPECT_EQ(failed[t], 0) << "thread " << t << " ran out of space";
    all.insert(all.end(), kept[t].begin(), kept[t].end());
  }
  EXPECT_EQ(a.stats().blocks_allocated, all.size());
  AuditReport rep = a.audit(walk_list(all));
  EXPECT_TRUE(rep.ok()) << rep.describe();
  for (std::uint64_t o : all) a.free(o);
  EXPECT_EQ(a.stats().blocks_allocated, 0u);
}

TEST(AllocatorTest, BlocksFreedByAnotherThreadAreReusable) {
  auto pool = make_pool(4 << 20);
  Allocator& a = pool->allocator();
  constexpr int kThreads = 3, kBlocks = 3000;
  std::vector<std::vector<std::uint64_t>> made(kThreads);
  auto run = [&](auto&& body) {
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) ts.emplace_back(body, t);
    for (auto& th : ts) th.join();
  };
  run([&](int t) {
    for (int i = 0; i < kBlocks; ++i) {
      std::uint64_t o;
      if (a.allocate(64 + (i % 4) * 64, &o) == Status::ok) made[t].push_back(o);
    }
  });
  for (const auto& v : made) ASSERT_EQ(v.size(), static_cast<std::size_t>(kBlocks));
  const std::uint64_t hwm = pool->header().chunk_hwm;
  // Each thread frees its neighbour's blocks, then allocates as many again: all of them
  // come from freed blocks (no new chunk), none is handed out twice.
  std::vector<std::vector<std::uint64_t>> again(kThreads);
  run([&](int t) {
    for (std::uint64_t o : made[(t + 1) % kThreads]) a.free(o);
    for (int i = 0; i < kBlocks; ++i) {
      std::uint64_t o;
      if (a.allocate(64 + (i % 4) * 64, &o) == Status::ok) again[t].push_back(o);
    }
  });
  std::vector<std::uint64_t> all;
  for (auto& v : again) {
    EXPECT_EQ(v.size(), static_cast<std::size_t>(kBlocks));
    all.insert(all.end(), v.begin(), v.end());
  }
  EXPECT_EQ(std::set<std::uint64_t>(all.begin(), all.end()).size(), all.size());
  EXPECT_LE(pool->header().chunk_hwm, hwm + kThreads * 4);  // at most a chunk per cache class
  AuditReport rep = a.audit(walk_list(all));
  EXPECT_TRUE(rep.ok()) << rep.describe();
}

// A block another thread freed sits in that thread's cache, which only it reads: in a full
// pool this thread's allocation fails until drain_all_caches() (the caller's guarantee: no
// other thread inside the allocator) puts the cached blocks on the global lists.
TEST(AllocatorTest, DrainAllCachesHandsOtherThreadsCachedBlocksOut) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::vector<std::uint64_t> got;
  std::uint64_t o;
  while (a.allocate(1000, &o) == Status::ok) got.push_back(o);
  // Another thread frees a few: fewer than its cache keeps, so none reaches the global list.
  constexpr std::size_t kFreed = 3;
  std::thread([&] {
    for (std::size_t i = 0; i < kFreed; ++i) a.free(got[i]);
  }).join();
  EXPECT_EQ(a.allocate(1000, &o), Status::out_of_space) << "the blocks are in its cache";
  a.drain_all_caches();
  std::set<std::uint64_t> again;
  while (a.allocate(1000, &o) == Status::ok) again.insert(o);
  EXPECT_EQ(again, std::set<std::uint64_t>(got.begin(), got.begin() + kFreed));
}

TEST(AllocatorTest, RecoverOnAFreshPoolOnlyChecksTheWalk) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  EXPECT_FALSE(a.trace_pending());
  std::uint64_t x, y;
  ASSERT_EQ(a.allocate(64, &x), Status::ok);
  ASSERT_EQ(a.allocate(64, &y), Status::ok);
  a.free(y);
  std::vector<std::uint64_t> good = {x}, freed = {x, y};
  EXPECT_TRUE(a.recover(walk_list(good)).ok());
  EXPECT_EQ(a.recover(walk_list(freed)).status(), Status::corrupt);
  EXPECT_EQ(a.stats().blocks_allocated, 1u);
}

#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
TEST(AllocatorDeathTest, BadFreesAbortInCheckedBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::uint64_t x, big;
  ASSERT_EQ(a.allocate(64, &x), Status::ok);
  ASSERT_EQ(a.allocate(2 * kChunk, &big), Status::ok);
  a.free(x);
  EXPECT_DEATH(a.free(x), "double free");
  EXPECT_DEATH(a.free(big + 64), "not at its start");
  EXPECT_DEATH(a.free(16), "outside the chunk area");
  a.free(big);
  EXPECT_DEATH(a.free(big), "double free");
}
#endif

// --- recovery by tracing ---------------------------------------------------------------

struct Recovered {
  std::unique_ptr<Pool> src;
  std::vector<std::uint64_t> live, dead;
  std::uint64_t hwm = 0;
};

//! Allocates a mix of blocks in `pool`; returns them split into reachable / unreachable.
Recovered allocate_mix() {
  Recovered r;
  r.src = make_pool();
  Allocator& a = r.src->allocator();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::uint64_t o;
    const std::size_t bytes = i % 50 == 0 ? kChunk + 1 : 1 + rng() % 700;
    EXPECT_EQ(a.allocate(bytes, &o), Status::ok);
    (rng() % 2 ? r.live : r.dead).push_back(o);
  }
  r.hwm = r.src->header().chunk_hwm;
  return r;
}

TEST(AllocatorRecoveryTest, UnreachedBlocksBecomeFreeAndAllocationsBeforeRecoverAreFresh) {
  Recovered r = allocate_mix();
  Image img(*r.src);  // "crash": the image holds the blocks, no free lists
  auto re = Pool::attach(img.span(), "test");
  ASSERT_TRUE(re.ok()) << re.error().message;
  Pool& pool = **re;
  Allocator& a = pool.allocator();
  ASSERT_TRUE(a.trace_pending());
  const std::uint64_t old_end = pool.header().first_chunk_offset + r.hwm * kChunk;

  // Before the trace: allocations come from chunks above the old high-water mark.
  std::vector<std::uint64_t> fresh;
  for (int i = 0; i < 20; ++i) {
    std::uint64_t o;
    ASSERT_EQ(a.allocate(100 + i * 30, &o), Status::ok);
    EXPECT_GE(o, old_end);
    fresh.push_back(o);
  }
  // Freeing an old block before the trace is deferred to the trace (it is not reachable).
  a.free(r.dead.front());

  std::vector<std::uint64_t> reach = r.live;
  reach.insert(reach.end(), fresh.begin(), fresh.end());
  auto rec = a.recover(walk_list(reach));
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_FALSE(a.trace_pending());
  // A second call only checks the walk: fine for the same walk, corrupt for a freed block.
  EXPECT_TRUE(a.recover(walk_list(reach)).ok());
  std::vector<std::uint64_t> with_dead = {r.dead[1]};
  EXPECT_EQ(a.recover(walk_list(with_dead)).status(), Status::corrupt);

  AuditReport rep = a.audit(walk_list(reach));
  EXPECT_TRUE(rep.ok()) << rep.describe();
  EXPECT_EQ(a.stats().blocks_allocated, reach.size());

  // Everything else is free and reusable, and never collides with a reachable block.
  const std::set<std::uint64_t> taken(reach.begin(), reach.end());
  std::set<std::uint64_t> dead_got;
  const std::set<std::uint64_t> dead(r.dead.begin(), r.dead.end());
  std::uint64_t o;
  while (a.allocate(r.src->allocator().block_size(r.dead[1]), &o) == Status::ok) {
    ASSERT_EQ(taken.count(o), 0u) << "handed out a reachable block";
    if (dead.count(o)) dead_got.insert(o);
  }
  EXPECT_FALSE(dead_got.empty());
  for (std::uint64_t d : r.dead)  // every unreached block of that class came back
    if (r.src->allocator().block_size(d) == r.src->allocator().block_size(r.dead[1])) {
      EXPECT_EQ(dead_got.count(d), 1u) << d;
    }
}

TEST(AllocatorRecoveryTest, BadWalksAreCorruptAndLeaveTheTracePending) {
  Recovered r = allocate_mix();
  Image img(*r.src);
  auto re = Pool::attach(img.span());
  ASSERT_TRUE(re.ok());
  Allocator& a = (*re)->allocator();
  const std::uint64_t first = (*re)->header().first_chunk_offset;

  std::uint64_t small = 0;
  for (std::uint64_t o : r.live)
    if (a.block_size(o) < kChunk) {
      small = o;
      break;
    }
  ASSERT_NE(small, 0u);
  std::vector<std::uint64_t> mid = {small + 8};  // not a block start of any class
  auto e1 = a.recover(walk_list(mid));
  EXPECT_EQ(e1.status(), Status::corrupt);
  EXPECT_NE(e1.error().message.find("not at a block start"), std::string::npos)
      << e1.error().message;
  std::vector<std::uint64_t> twice = {r.live[0], r.live[1], r.live[0]};
  EXPECT_EQ(a.recover(walk_list(twice)).status(), Status::corrupt);
  std::vector<std::uint64_t> beyond = {first + (r.hwm + 2) * kChunk};  // uncarved chunk
  EXPECT_EQ(a.recover(walk_list(beyond)).status(), Status::corrupt);
  std::vector<std::uint64_t> header = {64};
  EXPECT_EQ(a.recover(walk_list(header)).status(), Status::corrupt);
  EXPECT_TRUE(a.trace_pending());

  ASSERT_TRUE(a.recover(walk_list(r.live)).ok());
  EXPECT_TRUE(a.audit(walk_list(r.live)).ok());
}

TEST(AllocatorRecoveryTest, ReopenedFileRecovers) {
  char tmpl[] = "/tmp/wort_alloc_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/pool";
  std::vector<std::uint64_t> live;
  {
    PoolOptions o;
    o.size = 1 << 20;
    o.chunk_size = kChunk;
    o.kind = "test";
    auto p = Pool::create(path, o);
    ASSERT_TRUE(p.ok());
    for (int i = 0; i < 50; ++i) {
      std::uint64_t off;
      ASSERT_EQ((*p)->allocator().allocate(48 + i, &off), Status::ok);
      if (i % 3) live.push_back(off);
    }
  }
  {
    auto p = Pool::open(path);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_TRUE((*p)->allocator().recover(walk_list(live)).ok());
    AuditReport rep = (*p)->allocator().audit(walk_list(live));
    EXPECT_TRUE(rep.ok()) << rep.describe();
  }
  std::filesystem::remove_all(tmpl);
}

//! An outside review's find: an instant restart hands out only unfrozen
//! chunks until its trace ends, and every carved chunk used to be frozen at every open, so
//! a pool whose chunks had all been carved once served nothing before the trace, however
//! little it held. A chunk or large span the trace finds empty is now durably free (chunk
//! table tag 3): the next open uses it before any trace, and the high-water mark stays.
TEST(AllocatorRecoveryTest, ChunksFoundEmptyServeTheNextOpenBeforeItsTrace) {
  Recovered r = allocate_mix();
  // Keep the blocks of the first chunk only: every other chunk and span holds nothing live.
  Image img(*r.src);
  auto re = Pool::attach(img.span(), "test");
  ASSERT_TRUE(re.ok()) << re.error().message;
  const std::uint64_t first = (*re)->header().first_chunk_offset;
  const std::uint64_t old_end = first + r.hwm * kChunk;
  std::vector<std::uint64_t> keep;
  for (std::uint64_t o : r.live)
    if (o < first + kChunk) keep.push_back(o);
  ASSERT_FALSE(keep.empty());
  ASSERT_GT(r.hwm, 3u);
  ASSERT_TRUE((*re)->allocator().recover(walk_list(keep)).ok());

  // "Crash" after that recovery: the next open has a trace pending, and yet its first
  // allocations, of every size, come from the chunks found empty, below the old mark.
  Image img2(**re);
  auto re2 = Pool::attach(img2.span(), "test");
  ASSERT_TRUE(re2.ok()) << re2.error().message;
  Allocator& a = (*re2)->allocator();
  ASSERT_TRUE(a.trace_pending());
  std::vector<std::uint64_t> got;
  for (std::size_t bytes : {std::size_t{100}, std::size_t{700}, std::size_t{kChunk + 1}}) {
    std::uint64_t o;
    ASSERT_EQ(a.allocate(bytes, &o), Status::ok);
    EXPECT_GE(o, first + kChunk) << "a block of the chunk that holds live ones";
    EXPECT_LT(o, old_end) << "a fresh chunk, though chunks found empty were free";
    got.push_back(o);
  }
  EXPECT_EQ((*re2)->header().chunk_hwm, r.hwm);
  // The trace then decides the first chunk as before, and nothing is used twice.
  std::vector<std::uint64_t> reach = keep;
  reach.insert(reach.end(), got.begin(), got.end());
  ASSERT_TRUE(a.recover(walk_list(reach)).ok());
  AuditReport rep = a.audit(walk_list(reach));
  EXPECT_TRUE(rep.ok()) << rep.describe();
  const std::set<std::uint64_t> taken(reach.begin(), reach.end());
  std::uint64_t o;
  while (a.allocate(100, &o) == Status::ok) ASSERT_EQ(taken.count(o), 0u);

  // A table with a free span that does not fit below the mark is refused at the open.
  Image img3(**re);
  auto* table = reinterpret_cast<std::uint64_t*>(img3.mem + (*re)->header().chunk_table_offset);
  std::uint64_t c = 1;
  while (chunk_entry_tag(table[c]) != ChunkTag::free) c += std::max<std::uint64_t>(chunk_entry_span(table[c]), 1);
  ASSERT_LT(c, r.hwm);
  table[c] = chunk_entry_free(r.hwm);  // runs past the high-water mark
  auto bad = Pool::attach(img3.span(), "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("free span"), std::string::npos) << bad.error().message;
}

// --- audit -------------------------------------------------------------------------------

TEST(AllocatorAuditTest, DetectsLeakedDoublyUsedAndNotAllocated) {
  auto pool = make_pool();
  Allocator& a = pool->allocator();
  std::uint64_t x, y, z, big;
  ASSERT_EQ(a.allocate(64, &x), Status::ok);
  ASSERT_EQ(a.allocate(64, &y), Status::ok);
  ASSERT_EQ(a.allocate(300, &z), Status::ok);
  ASSERT_EQ(a.allocate(2 * kChunk, &big), Status::ok);

  std::vector<std::uint64_t> all = {x, y, z, big};
  EXPECT_TRUE(a.audit(walk_list(all)).ok());

  std::vector<std::uint64_t> missing = {x, y, big};
  AuditReport leak = a.audit(walk_list(missing));
  EXPECT_EQ(leak.leaked, std::vector<std::uint64_t>{z});
  EXPECT_TRUE(leak.doubly_used.empty());
  EXPECT_TRUE(leak.not_allocated.empty());
  EXPECT_NE(leak.describe().find("leaked"), std::string::npos);

  std::vector<std::uint64_t> dup = {x, y, z, big, y};
  AuditReport twice = a.audit(walk_list(dup));
  EXPECT_EQ(twice.doubly_used, std::vector<std::uint64_t>{y});
  EXPECT_TRUE(twice.leaked.empty());
  EXPECT_NE(twice.describe().find("doubly used"), std::string::npos);

  std::vector<std::uint64_t> inside = {x, y, z, big, x + 16, big + kChunk};
  AuditReport wrong = a.audit(walk_list(inside));
  EXPECT_EQ(wrong.not_allocated, (std::vector<std::uint64_t>{x + 16, big + kChunk}));

  a.free(z);
  AuditReport freed = a.audit(walk_list(all));
  EXPECT_EQ(freed.not_allocated, std::vector<std::uint64_t>{z});
  EXPECT_TRUE(freed.leaked.empty());
  EXPECT_NE(freed.describe().find("not allocated"), std::string::npos);
  EXPECT_FALSE(freed.ok());
}

}  // namespace
}  // namespace wort::pm
