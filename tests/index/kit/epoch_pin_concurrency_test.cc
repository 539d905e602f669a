// The epoch reclaimer behind the concurrent ART engine (src/index/kit/epoch.h): what a
// pin keeps alive, deterministically (one thread, a free function that records), and a
// threaded run for the TSan build. Named *_concurrency_test so the TSan build runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "index/kit/epoch.h"

namespace wort::test {
namespace {

using kit::EpochReclaimer;

struct Freed {
  std::vector<std::uint64_t> offs;
  static void record(void* ctx, std::uint64_t off) { static_cast<Freed*>(ctx)->offs.push_back(off); }
};

//! A heap "block" that readers reach through a shared pointer and the reclaimer frees:
//! free() poisons it before deleting it, so a reader that reads it after its free sees the
//! poison (and ASan the read after the delete).
struct Block {
  std::atomic<std::uint64_t> v{7};
  static void free(void*, std::uint64_t off) {
    auto* b = reinterpret_cast<Block*>(off);
    b->v.store(0xdead, std::memory_order_relaxed);
    delete b;
  }
  //! One pinned read of the current block: true if it was not freed.
  static bool pinned_read_is_live(EpochReclaimer& e, const std::atomic<Block*>& cur) {
    EpochReclaimer::Pin p(e);
    return cur.load(std::memory_order_acquire)->v.load(std::memory_order_relaxed) == 7;
  }
};

TEST(PmartEpoch, NobodyPinnedFreesAtOnce) {
  Freed f;
  EpochReclaimer e(&Freed::record, &f);
  e.retire(64);
  EXPECT_EQ(f.offs, std::vector<std::uint64_t>{64});
  EXPECT_EQ(e.pending(), 0u);
}

TEST(PmartEpoch, APinKeepsWhatIsRetiredUntilItEnds) {
  Freed f;
  EpochReclaimer e(&Freed::record, &f);
  {
    EpochReclaimer::Pin p(e);
    e.retire(64);
    e.reclaim();
    EXPECT_TRUE(f.offs.empty());
    EXPECT_EQ(e.pending(), 1u);
  }
  e.reclaim();
  EXPECT_EQ(f.offs, std::vector<std::uint64_t>{64});
}

// Regression: a scan's visitor that calls lookup on the same tree used to end the scan's
// pin when the lookup's pin ended (one word per thread), so blocks the scan still walked
// could be freed. The scan's NestablePin holds its own word.
TEST(PmartEpoch, APinInsideAScanPinDoesNotEndIt) {
  Freed f;
  EpochReclaimer e(&Freed::record, &f);
  {
    EpochReclaimer::NestablePin scan(e);
    { EpochReclaimer::Pin lookup(e); }
    {
      EpochReclaimer::NestablePin inner_scan(e);  // a scan inside the visitor
    }
    e.retire(64);
    e.reclaim();
    EXPECT_TRUE(f.offs.empty()) << "freed while the outer scan is still pinned";
  }
  e.reclaim();
  EXPECT_EQ(f.offs, std::vector<std::uint64_t>{64});
}

// A block retired while another thread is pinned survives until that thread unpins; one
// retired after it unpinned is freed at once.
TEST(PmartEpoch, AnotherThreadsPinKeepsTheBlock) {
  Freed f;
  EpochReclaimer e(&Freed::record, &f);
  std::atomic<int> stage{0};
  std::thread t([&] {
    EpochReclaimer::Pin p(e);
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  e.retire(64);
  e.reclaim();
  EXPECT_TRUE(f.offs.empty());
  stage.store(2);
  t.join();
  e.reclaim();
  EXPECT_EQ(f.offs, std::vector<std::uint64_t>{64});
  e.retire(128);
  EXPECT_EQ(f.offs, (std::vector<std::uint64_t>{64, 128}));
}

// With another thread holding an id, a retire only appends the block, unstamped (no
// barrier, no read of the other thread's pin word), and blocks are stamped and freed a
// batch at a time: when the retiring thread's list reaches kBatch (32), every list — the
// other thread's too — under what is pinned then. A pin older than the stamps keeps them;
// once it ends, the next batch frees all; a thread alone again frees at once, and an ended
// thread's blocks are freed by the next reclaim of a thread alone.
TEST(PmartEpoch, WithAnotherThreadAboutRetiresWaitForABatch) {
  Freed f;
  EpochReclaimer e(&Freed::record, &f);
  std::atomic<int> stage{0};
  auto wait_for = [&](int s) {
    while (stage.load() != s) std::this_thread::yield();
  };
  { EpochReclaimer::Pin p(e); }  // this thread takes its id first
  for (int i = 0; i < 3; ++i) e.reclaim_all();  // the epoch past 1: a stamp too old shows
  std::thread t([&] {
    { EpochReclaimer::Pin p(e); }  // takes an id: two threads hold one now
    e.retire(8);                   // in this thread's list, unstamped
    stage.store(1);
    wait_for(2);
    {
      EpochReclaimer::Pin p(e);
      stage.store(3);
      wait_for(4);
    }
    stage.store(5);
    wait_for(6);
  });
  wait_for(1);
  std::uint64_t off = 16;
  for (int i = 0; i < 31; ++i, off += 16) {
    e.retire(off);
    e.reclaim();
  }
  EXPECT_TRUE(f.offs.empty()) << "freed before a batch, with another thread about";
  EXPECT_EQ(e.pending(), 32u);
  stage.store(2);
  wait_for(3);  // the other thread is pinned
  e.retire(off);
  off += 16;
  e.reclaim();  // 32 in this list: a batch, but the pin is older than every stamp
  EXPECT_TRUE(f.offs.empty()) << "a batch freed what a pinned thread may hold";
  EXPECT_EQ(e.pending(), 33u);
  stage.store(4);
  wait_for(5);  // unpinned, still holding its id
  for (int i = 0; i < 32; ++i, off += 16) {
    e.retire(off);
    e.reclaim();
  }
  EXPECT_EQ(f.offs.size(), 65u) << "the next batch did not free every list";
  EXPECT_NE(std::find(f.offs.begin(), f.offs.end(), 8u), f.offs.end())
      << "the other thread's block was not freed by this thread's batch";
  EXPECT_EQ(e.pending(), 0u);
  stage.store(6);
  t.join();
  std::thread ended([&] { e.retire(4096); });  // retired by a thread that then ends
  ended.join();
  e.reclaim();  // alone again, nobody pinned: every list
  EXPECT_EQ(f.offs.back(), 4096u);
  e.retire(8192);  // alone: at once
  EXPECT_EQ(f.offs.back(), 8192u);
  EXPECT_EQ(e.pending(), 0u);
}

// Readers pin and read a shared "block" (a heap word the reclaimer frees) while a writer
// swaps in new ones and retires the old: a reader never reads a freed block (the free
// function poisons it; TSan also sees any race on it).
TEST(PmartEpoch, ReadersNeverSeeAFreedBlock) {
  EpochReclaimer e(&Block::free, nullptr);
  std::atomic<Block*> cur{new Block};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed))
        if (!Block::pinned_read_is_live(e, cur)) bad.fetch_add(1);
    });
  for (int i = 0; i < 20000; ++i) {
    Block* old = cur.exchange(new Block, std::memory_order_acq_rel);
    e.retire(reinterpret_cast<std::uint64_t>(old));
    e.reclaim();
  }
  stop = true;
  for (auto& t : readers) t.join();
  e.drain();
  delete cur.load();
  EXPECT_EQ(bad.load(), 0u);
}

// The solo path (epoch.h, "One thread alone pays no barrier"): a writer thread that is the
// only one holding an id pins and retires without a barrier and frees at once. Readers
// arrive one at a time (each arrival turns solo into shared: the newcomer runs membarrier
// before it reads) and leave again (back to solo), while the writer swaps and retires the
// shared block as fast as it can. A reader must never read a freed block (poisoned before
// it is deleted; ASan sees a read after the delete too). The writer must also have freed
// at once while alone: most of its retires are freed with nothing pending.
TEST(PmartEpoch, ArrivingReadersNeverSeeABlockFreedSolo) {
  EpochReclaimer e(&Block::free, nullptr);
  std::atomic<Block*> cur{new Block};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0}, retired{0}, alone{0};
  std::thread writer([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      {
        EpochReclaimer::Pin p(e);  // a write's own descent
        (void)cur.load(std::memory_order_acquire)->v.load(std::memory_order_relaxed);
      }
      Block* old = cur.exchange(new Block, std::memory_order_acq_rel);
      e.retire(reinterpret_cast<std::uint64_t>(old));
      e.reclaim();
      retired.fetch_add(1, std::memory_order_relaxed);
      if (e.pending() == 0) alone.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int arrival = 0; arrival < 300; ++arrival) {
    std::thread reader([&] {
      for (int i = 0; i < 200; ++i)
        if (!Block::pinned_read_is_live(e, cur)) bad.fetch_add(1);
    });
    reader.join();
  }
  stop = true;
  writer.join();
  e.drain();
  delete cur.load();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(retired.load(), 300u);
  EXPECT_GT(alone.load(), 0u) << "the writer never had its block freed at once";
}

}  // namespace
}  // namespace wort::test
