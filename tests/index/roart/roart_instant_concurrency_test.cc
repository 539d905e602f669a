// Instant restart of ROART (paper 001 §3.4.2): Roart::open_instant returns before
// the allocator's recovery trace, which runs on a background thread while the tree serves
// requests (src/index/roart/roart_restart.cc, pm::Allocator::recover_concurrent). Shown here:
// lookups answered and inserts, upserts and removes (moving and unlinking blocks of the
// traced chunks) done while the trace is held mid-walk; after it, an allocator audit with no
// leak (blocks leaked before the restart reclaimed) and the contents as a reference says;
// blocks unlinked during the walk and still waiting for a pinned reader when it ends; writers
// racing a free-running trace; and two broken traces that these tests catch. Threaded: runs
// under TSan too (the kill -9 tests fork: roart_instant_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
#include "index/roart/roart_instant_support.h"
#include "support/keygen.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

using namespace roart_instant;

using roart::Roart;
namespace fs = std::filesystem;

//! The scenario below; returns whether everything checked out (for the broken variant).
bool held_scenario(bool expect_ok);

// Held after its first 64 blocks, the trace has not finished while every key is looked up,
// new keys go in (leaf arrays grow and split: old leaves move into new arrays, old nodes
// under new ones), present keys are upserted and removed (old blocks unlinked and freed
// while the trace runs). Then it finishes: no leak (the 40 leaked blocks reclaimed, the
// removed ones free), nothing live freed (contents, verify, audit), and the tree goes on.
TEST(RoartInstantRestart, ServesWhileTheTraceIsHeldThenAuditsClean) {
  EXPECT_TRUE(held_scenario(true));
}

#if WORT_FAULTS
// The broken variant: a trace that does not walk through this session's blocks misses the
// old leaves and nodes the inserts moved under new arrays and nodes, frees them, and the
// audit (live blocks free) and the reuse that follows catch it.
TEST(RoartInstantRestart, BrokenTraceThatSkipsNewBlocksIsCaught) {
  roart::g_broken_trace_skips_session_blocks = true;
  const bool ok = held_scenario(false);
  roart::g_broken_trace_skips_session_blocks = false;
  EXPECT_FALSE(ok) << "the broken trace went unnoticed";
}
#endif  // WORT_FAULTS

bool held_scenario(bool expect_ok) {
  ScenarioChecks check(expect_ok);
  TempDir d("held");
  const auto keys = make_keys(Gen::random_u64, 30000, 3);
  build(d.pool(), keys, 20000, 40);
  if (::testing::Test::HasFatalFailure()) return false;
  auto pool = Pool::open(d.pool(), Roart::kKind);
  if (!pool) return false;
  std::atomic<bool> hold{true};
  auto t = Roart::open_instant(**pool, &hold);
  if (!t) return false;
  Roart& r = **t;
  EXPECT_TRUE((*pool)->allocator().trace_pending());
  std::map<std::string, Value> ref;
  for (std::size_t i = 0; i < 20000; ++i) ref[keys[i]] = i;
  // lookups before the trace completes
  for (std::size_t i = 0; i < 20000; ++i) EXPECT_EQ(r.lookup(as_key(keys[i])), Value{i}) << i;
  EXPECT_FALSE(r.trace_done());
  // inserts, upserts, removes during the trace
  std::mt19937_64 rng(7);
  for (std::size_t i = 20000; i < 30000; ++i) {
    EXPECT_EQ(r.insert(as_key(keys[i]), i), Status::ok);
    ref[keys[i]] = i;
    const std::string& k = keys[rng() % i];
    if (rng() % 2) {
      EXPECT_EQ(r.upsert(as_key(k), i + 1000000), Status::ok);
      ref[k] = i + 1000000;
    } else if (ref.erase(k)) {
      EXPECT_EQ(r.remove(as_key(k)), Status::ok);
    }
  }
  EXPECT_FALSE(r.trace_done());
  EXPECT_TRUE((*pool)->allocator().trace_pending());
  hold = false;
  EXPECT_TRUE(r.wait_trace().ok());
  EXPECT_TRUE(r.trace_done());
  EXPECT_FALSE((*pool)->allocator().trace_pending());
  const auto a = audit(**pool, r);
  // (not past a failed audit: live blocks on the free lists would be reused under the tree)
  if (!check(a.ok(), a.describe())) return check.ok();
  if (!check(r.verify().ok(), "verify after the trace")) return check.ok();
  std::size_t n = 0;
  bool same = true;
  r.scan(Key{}, SIZE_MAX, [&](Key k, Value v) {
    auto it = ref.find(std::string(as_string(k)));
    same = same && it != ref.end() && it->second == v;
    ++n;
    return true;
  });
  check(same && n == ref.size(), "contents after the trace");
  // the reclaimed blocks serve allocations now; everything stays consistent
  for (std::size_t i = 0; i < 20000; ++i) (void)r.remove(as_key(keys[i]));
  for (std::size_t i = 0; i < 20000; ++i) (void)r.upsert(as_key(keys[i]), 5);
  for (std::size_t i = 0; i < 20000; ++i) check(r.lookup(as_key(keys[i])) == Value{5}, "reuse");
  if (!check(r.verify().ok(), "verify after reuse")) return check.ok();
  check(audit(**pool, r).ok(), "audit after reuse");
  return check.ok();
}

//! The scenario below; returns whether everything checked out (for the broken variant).
bool retired_scenario(bool expect_ok);

// Blocks unlinked during the walk and not yet freed when it ends: a reader pinned in a scan
// keeps the epoch, while the trace is held, 5000 old keys are removed (their leaves are
// unlinked before the walk gets to them, and retired: the reader may hold them). The walk
// ends while the reader is still pinned; the trace must wait for it (grace period) and keep
// what is still retired (the allocator's contract), else those leaves are made free and
// then freed a second time when the reader unpins. Then 20000 new keys take the free blocks:
// a block handed out twice shows as a lost key or a failed audit.
TEST(RoartInstantRestart, BlocksRetiredWhenTheWalkEndsStayLiveUntilFreed) {
  EXPECT_TRUE(retired_scenario(true));
}

#if WORT_FAULTS
// The broken variant: no grace period, no report of the retired blocks.
TEST(RoartInstantRestart, BrokenTraceThatSkipsRetiredBlocksIsCaught) {
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
  // Debug and ASan builds check every free (src/pm/allocator.cc, kCheckFrees): the retired
  // leaves the broken trace put on the free lists are freed again by the reader's unpin, and
  // the allocator aborts on that double free before the scenario's own checks can run.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        roart::g_broken_trace_skips_retired_blocks = true;
        (void)retired_scenario(false);
        std::exit(0);  // not caught: the death test fails
      },
      "double free");
  remove_orphaned("retired");  // the child's scratch pool (64 MiB), left by its abort
#else
  roart::g_broken_trace_skips_retired_blocks = true;
  const bool ok = retired_scenario(false);
  roart::g_broken_trace_skips_retired_blocks = false;
  EXPECT_FALSE(ok) << "the broken trace went unnoticed";
#endif
}
#endif  // WORT_FAULTS

bool retired_scenario(bool expect_ok) {
  ScenarioChecks check(expect_ok);
  TempDir d("retired");
  const auto keys = make_keys(Gen::random_u64, 40000, 11);
  build(d.pool(), keys, 20000, 0);
  if (::testing::Test::HasFatalFailure()) return false;
  auto pool = Pool::open(d.pool(), Roart::kKind);
  if (!pool) return false;
  std::atomic<bool> hold{true}, pinned{false}, release_reader{false};
  auto t = Roart::open_instant(**pool, &hold);
  if (!t) return false;
  Roart& r = **t;
  std::thread reader([&] {
    r.scan(Key{}, SIZE_MAX, [&](Key, Value) {
      pinned = true;
      while (!release_reader) std::this_thread::yield();
      return false;
    });
  });
  while (!pinned) std::this_thread::yield();
  std::map<std::string, Value> ref;
  for (std::size_t i = 0; i < 20000; ++i) ref[keys[i]] = i;
  for (std::size_t i = 0; i < 10000; i += 2) {
    check(r.remove(as_key(keys[i])) == Status::ok, "remove");
    ref.erase(keys[i]);
  }
  check(r.retired_pending() >= 5000, "the removed leaves wait for the pinned reader");
  check(!r.trace_done(), "the trace waits for its hold");
  hold = false;
  // The walk ends; a correct trace then waits for the reader, the broken one finishes.
  while (!r.trace_synchronizing() && !r.trace_done()) std::this_thread::yield();
  release_reader = true;  // it unpins and frees the removed leaves
  reader.join();
  check(r.wait_trace().ok(), "the trace");
  for (std::size_t i = 20000; i < 40000; ++i) {
    check(r.insert(as_key(keys[i]), i) == Status::ok, "insert after the trace");
    ref[keys[i]] = i;
  }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 40000; ++i) {
    const auto it = ref.find(keys[i]);
    wrong += r.lookup(as_key(keys[i])) !=
             (it == ref.end() ? std::nullopt : std::optional<Value>(it->second));
  }
  check(wrong == 0, std::to_string(wrong) + " keys with a wrong answer after reuse");
  if (!check(r.verify().ok(), "verify after reuse")) return check.ok();
  const auto a = audit(**pool, r);
  check(a.ok(), a.describe());
  return check.ok();
}

// open() is unchanged: the checked walk and the trace before it returns.
TEST(RoartInstantRestart, SynchronousOpenStillChecksFirst) {
  TempDir d("sync");
  const auto keys = make_keys(Gen::random_u64, 5000, 4);
  build(d.pool(), keys, 5000, 8);
  auto pool = Pool::open(d.pool(), Roart::kKind);
  ASSERT_TRUE(pool);
  auto t = Roart::open(**pool);
  ASSERT_TRUE(t);
  EXPECT_TRUE((*t)->trace_done());
  EXPECT_FALSE((*pool)->allocator().trace_pending());
  EXPECT_TRUE(audit(**pool, **t).ok());
}

// Writers race a trace that runs free (no hold), many times: each round reopens, lets 2
// threads insert/remove disjoint keys and 1 thread look up while the trace runs, then
// audits and compares.
TEST(RoartInstantRestart, WritersRaceAFreeRunningTrace) {
  TempDir d("race");
  const auto keys = make_keys(Gen::random_u64, 80000, 5);
  build(d.pool(), keys, 80000, 16);
  std::map<std::string, Value> ref;
  for (std::size_t i = 0; i < 80000; ++i) ref[keys[i]] = i;
  unsigned overlapped = 0;  // rounds where a writer's change landed before the trace ended
  for (unsigned round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto pool = Pool::open(d.pool(), Roart::kKind);
    ASSERT_TRUE(pool);
    auto t = Roart::open_instant(**pool);
    ASSERT_TRUE(t);
    Roart& r = **t;
    std::vector<std::map<std::string, Value>> changes(2);
    std::atomic<bool> overlap{false};
    std::vector<std::thread> th;
    for (unsigned w = 0; w < 2; ++w)
      th.emplace_back([&, w] {
        std::mt19937_64 rng(round * 10 + w);
        for (unsigned i = 0; i < 4000; ++i) {
          const std::size_t k = (rng() % 20000) * 2 + w;  // disjoint: even / odd indexes
          const std::string& key = keys[k];
          const bool present = (changes[w].count(key) ? changes[w][key] != ~Value{0}
                                                      : ref.count(key) != 0);
          if (present && rng() % 2) {
            if (r.remove(as_key(key)) == Status::ok) changes[w][key] = ~Value{0};
          } else if (r.upsert(as_key(key), i) == Status::ok) {
            changes[w][key] = i;
          }
          if (i == 0 && !r.trace_done()) overlap = true;
        }
      });
    th.emplace_back([&] {
      for (unsigned i = 0; i < 20000; ++i) (void)r.lookup(as_key(keys[i]));
    });
    for (auto& x : th) x.join();
    ASSERT_TRUE(r.wait_trace().ok());
    overlapped += overlap;
    for (auto& c : changes)
      for (auto& [k, v] : c) {
        if (v == ~Value{0}) ref.erase(k);
        else ref[k] = v;
      }
    const auto a = audit(**pool, r);
    EXPECT_TRUE(a.ok()) << a.describe();
    ASSERT_TRUE(r.verify().ok());
    std::size_t n = 0;
    r.scan(Key{}, SIZE_MAX, [&](Key k, Value v) {
      auto it = ref.find(std::string(as_string(k)));
      EXPECT_TRUE(it != ref.end() && it->second == v);
      ++n;
      return true;
    });
    EXPECT_EQ(n, ref.size());
  }
  // (timing: not asserted; the held tests above overlap by construction)
  std::printf("[roart instant] %u of 6 rounds had a change before the trace ended\n", overlapped);
}

// Many instant restarts of a pool that holds little (an outside review's find):
// each round reopens with the trace held, removes and re-inserts every key while it waits
// (every allocation then comes from chunks the trace does not decide), lets it finish and
// closes. The chunks emptied by the removes used to stay frozen at every later open, so
// each round carved fresh ones until the pool had none left and the held rounds answered
// out_of_space (from round 24 of 40 here before the mend); now a chunk a trace finds empty is
// free at the next open (pm/chunk_table.h, tag 3) and the high-water mark stops growing.
TEST(RoartInstantRestart, RestartsReuseTheChunksTheirTracesFreed) {
  TempDir d("reuse");
  const auto keys = make_keys(Gen::random_u64, 3000, 6);
  build(d.pool(), keys, 3000, 0, 8ull << 20);
  std::uint64_t total = 0, after_first = 0, peak = 0;
  for (unsigned round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto pool = Pool::open(d.pool(), Roart::kKind);
    ASSERT_TRUE(pool);
    std::atomic<bool> hold{true};
    auto t = Roart::open_instant(**pool, &hold);
    ASSERT_TRUE(t);
    Roart& r = **t;
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(r.remove(as_key(keys[i])), Status::ok);
    for (std::size_t i = 0; i < keys.size(); ++i)
      ASSERT_EQ(r.insert(as_key(keys[i]), i + round), Status::ok) << "key " << i;
    hold = false;
    ASSERT_TRUE(r.wait_trace().ok());
    const auto a = audit(**pool, r);
    ASSERT_TRUE(a.ok()) << a.describe();
    const pm::AllocatorStats st = (*pool)->allocator().stats();
    total = st.chunks_total;
    peak = std::max(peak, st.chunks_used);
    if (round == 1) after_first = st.chunks_used;
  }
  // Two rounds' working sets at most (the keys, and their copies made while the old ones
  // wait for the trace), however many rounds ran; not the whole pool.
  EXPECT_LE(peak, 3 * after_first) << "of " << total << " chunks";
  EXPECT_LT(peak, total);
  std::printf("[roart instant] 40 restarts: peak %llu of %llu chunks carved (%llu after round 1)\n",
              (unsigned long long)peak, (unsigned long long)total, (unsigned long long)after_first);
}

}  // namespace
}  // namespace wort::test
