// Index::reclaim_retired: with two threads of the process holding epoch ids, a concurrent
// index's writer frees the blocks it unlinks in batches (its list at 32), so blocks wait;
// reclaim_retired frees every one of them (the server relies on it before it retries an
// insert or remove in a full pool). For every persistent kind: removes with another thread
// about, then reclaim_retired; the blocks freed are counted, the pool audits clean, and a
// second call frees nothing more.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"

namespace wort {
namespace {

using kittest::key_of;

TEST(ReclaimRetired, FreesWhatWritersRetiredWhileAnotherThreadWasAbout) {
  std::uint64_t freed_total = 0;
  for (const std::string& kind : kittest::persistent_kinds()) {
    SCOPED_TRACE(kind);
    PoolOptions o;
    o.size = 64u << 20;
    o.kind = kind;
    auto pool = Pool::create_in_memory(o);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    auto made = Index::create(**pool, kind);
    ASSERT_TRUE(made.ok()) << made.error().message;
    Index& ix = **made;
    const auto keys = kittest::mixed_keys(20000);
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(ix.insert(key_of(keys[i]), i + 1), Status::ok);
    // Another thread takes an epoch id (a lookup pins) and keeps it until the end: the
    // removes below are no longer a lone thread's, whose retired blocks are freed at once.
    std::atomic<bool> holding{false}, done{false};
    std::thread other([&] {
      (void)ix.lookup(key_of(keys[0]));
      holding = true;
      while (!done) std::this_thread::yield();
    });
    while (!holding) std::this_thread::yield();
    for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_EQ(ix.remove(key_of(keys[i])), Status::ok);
    const std::uint64_t before = (*pool)->allocator().stats().blocks_allocated;
    ix.reclaim_retired();
    const std::uint64_t after = (*pool)->allocator().stats().blocks_allocated;
    ix.reclaim_retired();
    EXPECT_EQ((*pool)->allocator().stats().blocks_allocated, after) << "a second call freed more";
    done = true;
    other.join();
    EXPECT_LE(after, before);
    freed_total += before - after;
    std::printf("%s: %llu retired blocks freed\n", kind.c_str(),
                static_cast<unsigned long long>(before - after));
    auto v = ix.verify();
    EXPECT_TRUE(v.ok()) << v.error().message;
    kittest::expect_audit_clean(**pool, ix);
  }
  EXPECT_GT(freed_total, 0u) << "no kind had a retired block waiting: the test proves nothing";
}

}  // namespace
}  // namespace wort
