// The solo write path of the indexes that have one (kit::EpochReclaimer::SoloWrite: WORT and
// the ART engine's WOART and ART+CoW), seen from outside through the persistence tracer: a
// thread alone in the process writes without taking a writer lock (no Tracer::on_before_cas)
// and without a volatile store into the pool (no lock word, no fresh mark set and then
// cleared: its inserts store nothing into a leaf after their commit); with a second thread
// holding an epoch id, the same writes take locks and clear marks again. The tracer allows
// solo writes (as the crash simulator's single-threaded runs do), so this is also the
// harness-level check that those crash runs take the solo path.
// Its own binary, and every index on a thread of its own: the main thread never pins, so
// that thread can be alone. Named *_concurrency_test so the TSan build runs it (solo is off
// there: the test says so and skips).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "index/kit/epoch.h"
#include "index/kit/kit_support.h"
#include "pm/tracer.h"
#include "support/solo_probe.h"

namespace wort {
namespace {

using kit::EpochReclaimer;
using kittest::key_of;

//! Counts lock attempts and volatile pool stores; lets writes run solo.
struct Counter final : pm::Tracer {
  std::uint64_t cas = 0, volatile_stores = 0, commits = 0;
  void on_store(void*, const void*, std::size_t) override {}
  void on_volatile_store(void*, const void*, std::size_t) override { ++volatile_stores; }
  void on_before_cas(void*) override { ++cas; }
  void on_nt_store(void*, std::uint64_t) override {}
  void on_flush(const void*, std::size_t) override {}
  void on_fence() override {}
  void on_commit(void*, std::size_t, bool) override { ++commits; }
  bool allows_solo_writes() const noexcept override { return true; }
};

//! What one round of writes did under the counting tracer.
struct Round {
  Counter c;
  bool ok = true;
};

//! On the calling thread: inserts keys[from, to) (into a tree that holds keys[0, from), so
//! empty slots, leaf splits and prefix splits), upserts every 7th and removes every 5th
//! (merges), all under a Counter; then checks every key.
void write_round(Index& ix, const std::vector<std::string>& keys, std::size_t from,
                 std::size_t to, Round* r) {
  pm::set_tracer(&r->c);
  for (std::size_t i = from; i < to; ++i) r->ok &= ix.insert(key_of(keys[i]), i) == Status::ok;
  for (std::size_t i = from; i < to; i += 7) r->ok &= ix.upsert(key_of(keys[i]), i + 1) == Status::ok;
  for (std::size_t i = from + 1; i < to; i += 5) r->ok &= ix.remove(key_of(keys[i])) == Status::ok;
  pm::set_tracer(nullptr);
  for (std::size_t i = from; i < to; ++i) {
    const std::optional<Value> want =
        (i - from) % 5 == 1 ? std::nullopt
                            : std::optional<Value>((i - from) % 7 == 0 ? i + 1 : i);
    r->ok &= ix.lookup(key_of(keys[i])) == want;
  }
}

class SoloWrites : public ::testing::TestWithParam<std::string> {};

TEST_P(SoloWrites, ALoneThreadTakesNoLockAndLeavesNoMarkUntilASecondThreadArrives) {
  EpochReclaimer probe(+[](void*, std::uint64_t) {}, nullptr);
  if (!test::a_new_threads_write_is_solo(probe))
    GTEST_SKIP() << "solo writes are off here (membarrier refused, or ThreadSanitizer)";
  const std::string kind = GetParam();
  kittest::TempPath path("solo-" + kind);
  const auto keys = kittest::mixed_keys(6000);
  Round alone, with_other;
  // stage: 1 the lone round is done, 2 a second thread holds an id, 3 the second round is
  // done (or the writer gave up: -1)
  std::atomic<int> stage{0};
  std::thread writer([&] {
    auto fail = [&](const std::string& why) {
      ADD_FAILURE() << why;
      stage = -1;
    };
    PoolOptions o;
    o.size = 64ull << 20;
    o.kind = kind;
    auto pool = Pool::create(path.str(), o);
    if (!pool.ok()) return fail(pool.error().message);
    auto ix = Index::create(**pool, kind);
    if (!ix.ok()) return fail(ix.error().message);
    for (std::size_t i = 0; i < 2000; ++i)
      if ((*ix)->insert(key_of(keys[i]), i) != Status::ok) return fail("a first insert failed");
    write_round(**ix, keys, 2000, 4000, &alone);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
    write_round(**ix, keys, 4000, 6000, &with_other);
    EXPECT_TRUE((*ix)->verify().ok());
    stage = 3;
  });
  while (stage.load() == 0) std::this_thread::yield();
  if (stage.load() < 0) {
    writer.join();
    return;
  }
  std::thread other([&] {
    EpochReclaimer e(+[](void*, std::uint64_t) {}, nullptr);
    { EpochReclaimer::Pin p(e); }  // holds an id until it exits
    stage = 2;
    while (stage.load() != 3) std::this_thread::yield();
  });
  writer.join();
  other.join();
  EXPECT_TRUE(alone.ok);
  EXPECT_TRUE(with_other.ok);
  EXPECT_GT(alone.c.commits, 0u);
  EXPECT_EQ(alone.c.cas, 0u) << "a lone thread's writes took locks";
  EXPECT_EQ(alone.c.volatile_stores, 0u) << "a lone thread's writes stored lock words or marks";
  EXPECT_GT(with_other.c.cas, 0u) << "writes with a second thread about took no lock";
  EXPECT_GT(with_other.c.volatile_stores, 0u) << "writes with a second thread about set no mark";
}

INSTANTIATE_TEST_SUITE_P(ArtFamily, SoloWrites, ::testing::Values("wort", "woart", "artcow"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
