// Concurrent histories in the crash simulator (crashsim::run_concurrent_kv): two writers
// interleaved at fences and operation boundaries by seeded schedules, crashed before every
// fence of either and at every acknowledgement.
//
// Proof that it can fail where run_kv cannot (concurrent_crash_toy.h):
//   cover_others    one writer's commit publishes the other's half-written record
//   borrowed_fence  a writer relies on the other writer's sfence to order its write-back
// both clean with one writer (run_kv and run_concurrent_kv), caught with two; the second
// is clean again under the unsound one-global-fence model (ScheduleOptions::global_fences),
// so it is the per-thread fence that catches it. Then the real concurrent indexes, two
// writers on disjoint and on overlapping keys of small trees.
//
// Soak: WORT_CONC_CRASH_SCHEDULES=N (default 12 per index and key pattern),
// WORT_CONC_CRASH_OPS (operations per writer, default 6), WORT_CONC_CRASH_WRITERS (2..4),
// WORT_CONC_CRASH_KEYS (24), WORT_CONC_CRASH_SETUP (keys inserted first; the index's
// default), WORT_CONC_CRASH_SWITCH_PCT (the coin, 50).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "concurrent_crash_toy.h"
#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "index/fastfair/fastfair_tree.h"
#include "index/fptree/fptree_tree.h"
#include "index/roart/roart_tree.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;
using crashsim::Options;
using crashsim::Report;
using Threads = std::vector<std::vector<KvOp>>;

std::uint64_t env_count(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : dflt;
}

bool caught_by_images(const Report& r) {
  return r.has("NOT_ATOMIC") || r.has("LOST_ACK") || r.has("EXTRA_KEY");
}

std::string first_replay(const Report& r) {
  for (const auto& f : r.findings)
    if (f.kind == "NOT_ATOMIC" || f.kind == "LOST_ACK" || f.kind == "EXTRA_KEY") return f.replay;
  return {};
}

// --- the toy log --------------------------------------------------------------------

//! Writer t inserts keys t+1, t+1+n, ... (disjoint).
Threads toy_writers(std::size_t threads, std::size_t per_thread) {
  Threads w(threads);
  for (std::size_t i = 0; i < per_thread; ++i)
    for (std::size_t t = 0; t < threads; ++t)
      w[t].push_back(ins(u64_str(1 + t + threads * i), 10 * i + t));
  return w;
}

std::vector<KvOp> concat(const Threads& w) {
  std::vector<KvOp> all;
  for (const auto& t : w) all.insert(all.end(), t.begin(), t.end());
  return all;
}

template <LogBug B>
Report toy_run(const Threads& w, std::uint64_t seed, Options o = {},
               crashsim::ScheduleOptions s = {}) {
  o.seed = seed;
  return run_concurrent_and_print(crashsim::factory_of<ToyLog<B>>(), {ins(u64_str(1000))}, w, o,
                                  s);
}

//! A broken variant that only two writers can show: clean as a single-threaded history
//! (run_kv) and as one writer in the concurrent simulator.
template <LogBug B>
void expect_clean_with_one_writer() {
  const Threads w = toy_writers(2, 4);
  EXPECT_CLEAN(run_and_print(crashsim::factory_of<ToyLog<B>>(), {ins(u64_str(1000))}, concat(w),
                             {}));
  EXPECT_CLEAN(toy_run<B>({concat(w)}, 1));
}

constexpr std::uint64_t kToySchedules = 12;

TEST(ConcurrentCrash, CorrectLogIsCleanWithTwoAndThreeWriters) {
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    const Report r = toy_run<LogBug::none>(toy_writers(2, 4), seed);
    EXPECT_CLEAN(r);
    EXPECT_GT(r.switches, 0u) << r.summary();
  }
  for (std::uint64_t seed = 1; seed <= 4; ++seed) EXPECT_CLEAN(toy_run<LogBug::none>(toy_writers(3, 3), seed));
}

// A schedule with stalls replays: its last crash point, reached again by the recorded
// stalls (armed at their events, the turn passed once the writer blocks; the replay's own
// stall detection is off but for the 5 s wall bound), in the same state.
TEST(ConcurrentCrash, ScheduleWithStallsReplays) {
  std::size_t replayed = 0;
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    const Report r = toy_run<LogBug::none>(toy_writers(2, 4), seed);
    if (r.stalls == 0) continue;
    Options o;
    o.replay = "seed=" + std::to_string(seed) + ",stalls=" + r.schedule +
               ",point=" + std::to_string(r.crash_points - 1) + ",choice=all";
    // Stall detection off (but for a 5 s bound): the replay must force every stall itself.
    crashsim::ScheduleOptions forced_only;
    forced_only.stall_cpu_ms = forced_only.stall_sleep_ms = 1e9;
    forced_only.stall_wall_s = 5;
    const auto t0 = std::chrono::steady_clock::now();
    const Report again = run_concurrent_kv(crashsim::factory_of<ToyLog<LogBug::none>>(),
                                           std::vector<KvOp>{ins(u64_str(1000))},
                                           toy_writers(2, 4), o, forced_only);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0)
        << "a stall was not forced: " << o.replay;
    EXPECT_TRUE(again.error.empty()) << o.replay << ": " << again.summary();
    EXPECT_EQ(again.crash_points, 1u) << o.replay;
    EXPECT_EQ(again.schedule, r.schedule) << o.replay;
    EXPECT_TRUE(again.correct()) << again.summary();
    ++replayed;
  }
  EXPECT_GT(replayed, 2u);
}

// Broken variant (a): clean with one writer, in both simulators.
TEST(ConcurrentCrash, CoverOthersIsCleanWithOneWriter) {
  expect_clean_with_one_writer<LogBug::cover_others>();
}

// ... caught with two: a writer's commit makes the other's record reachable while only its
// key is durable. The finding replays.
TEST(ConcurrentCrash, CoverOthersIsCaughtWithTwoWritersAndReplays) {
  std::size_t caught = 0;
  std::string replay;
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    const Report r = toy_run<LogBug::cover_others>(toy_writers(2, 4), seed);
    EXPECT_TRUE(r.error.empty()) << r.summary();
    if (caught_by_images(r)) {
      ++caught;
      if (replay.empty()) replay = first_replay(r);
    }
  }
  EXPECT_GT(caught, 0u) << "no schedule of " << kToySchedules << " caught cover_others";
  ASSERT_FALSE(replay.empty());
  Options o;
  o.replay = replay;
  const Report again = run_concurrent_kv(crashsim::factory_of<ToyLog<LogBug::cover_others>>(),
                                         std::vector<KvOp>{ins(u64_str(1000))},
                                         toy_writers(2, 4), o);
  std::printf("[replay] %s\n  -> %s\n", replay.c_str(), again.summary().c_str());
  EXPECT_TRUE(again.error.empty()) << again.summary();
  EXPECT_TRUE(caught_by_images(again)) << again.summary();
  EXPECT_EQ(again.crash_points, 1u);
}

// Broken variant (b): clean with one writer.
TEST(ConcurrentCrash, BorrowedFenceIsCleanWithOneWriter) {
  expect_clean_with_one_writer<LogBug::borrowed_fence>();
}

// ... caught with two, by the commit lint (its own write-back not fenced at its commit) and,
// with the commit lints off, by the images; and NOT caught when the model lets any
// thread's fence order every thread's write-backs (the unsound model this test guards).
TEST(ConcurrentCrash, BorrowedFenceIsCaughtOnlyWithPerThreadFences) {
  std::size_t lint = 0, images = 0, global_findings = 0;
  Options no_commit_lints;
  no_commit_lints.commit_lints = false;
  crashsim::ScheduleOptions global;
  global.global_fences = true;
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    const Report r = toy_run<LogBug::borrowed_fence>(toy_writers(2, 4), seed);
    if (r.has("MISSING_FENCE")) ++lint;
    const Report ri = toy_run<LogBug::borrowed_fence>(toy_writers(2, 4), seed, no_commit_lints);
    if (caught_by_images(ri)) ++images;
    const Report rg =
        toy_run<LogBug::borrowed_fence>(toy_writers(2, 4), seed, no_commit_lints, global);
    EXPECT_TRUE(rg.error.empty()) << rg.summary();
    if (!rg.correct()) ++global_findings;
  }
  EXPECT_GT(lint, 0u);
  EXPECT_GT(images, 0u);
  EXPECT_EQ(global_findings, 0u);
}

// The history oracle also catches a plain concurrency bug: toy_log's insert checks for its
// key before it reserves a record (check-then-act), so two writers inserting one key can
// both succeed — no order of the two inserts returns ok twice: LIVE. Disjoint keys (above)
// never race there.
TEST(ConcurrentCrash, SameKeyInsertRaceIsALiveFinding) {
  std::size_t live = 0;
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    Threads w(2);
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t t = 0; t < 2; ++t) w[t].push_back(ins(u64_str(1 + i), 10 * i + t));
    const Report r = toy_run<LogBug::none>(w, seed);
    EXPECT_TRUE(r.error.empty()) << r.summary();
    if (r.has("LIVE")) ++live;
  }
  EXPECT_GT(live, 0u);
}

// Upserts never race there: two writers upserting the same keys leave, when the two were in
// flight together, either order's value — the oracle must accept both, in every image and
// in the live index at the end (a history that forgot such a key once reported the live
// index's value as an EXTRA_KEY).
TEST(ConcurrentCrash, SameKeyUpsertsAreClean) {
  for (std::uint64_t seed = 1; seed <= kToySchedules; ++seed) {
    Threads w(2);
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t t = 0; t < 2; ++t) w[t].push_back(ups(u64_str(1 + i % 2), 10 * i + t));
    EXPECT_CLEAN(toy_run<LogBug::none>(w, seed));
  }
}

// --- the real indexes ---------------------------------------------------------------

struct Subject {
  const char* name;
  crashsim::Factory factory;
  std::uint64_t pool_size;
  std::size_t setup_keys;  // inserted before the writers start
};

std::vector<Subject> subjects() {
  auto fastfair = factory_with_word0<FastFairTree>(256);
  auto fptree = crashsim::Factory{
      "fptree",
      [](Pool& p) {
        IndexOptions o;
        o.words = {4, 3, 0, 0};
        return adapt<FPTree>(FPTree::create(p, o));
      },
      [](Pool& p) { return adapt<FPTree>(FPTree::open(p)); }};
  // FAST&FAIR's 256-byte nodes hold 14 records: 12 keys, then the writers' inserts split the
  // leaf; FPTree's leaves hold 4 and its inner nodes 3 children: every few inserts split.
  // The radix trees: 24 random keys under one root grow NODE4 -> NODE16 -> NODE48 (WOART,
  // ART+CoW, ROART) and split WORT's leaves and prefixes; removes shrink and merge them.
  return {{"wort", crashsim::factory_of<WortTree>(), 1u << 20, 10},
          {"woart", crashsim::factory_of<woart::Woart>(), 1u << 20, 10},
          {"artcow", crashsim::factory_of<artcow::ArtCow>(), 1u << 20, 10},
          {"fastfair", fastfair, 1u << 20, 12},
          {"fptree", fptree, 1u << 20, 10},
          {"roart", crashsim::factory_of<roart::Roart>(), 4u << 20, 10}};
}

//! The simulator's options for one schedule (`seed`) of the writers on `s`: exhaustive up to
//! 16 crash images, else 2 sampled, each continued by 4 operations.
Options subject_options(const Subject& s, std::uint64_t seed) {
  Options o;
  o.seed = seed;
  o.pool_size = s.pool_size;
  o.exhaustive_cap = 16;
  o.random_samples = 2;
  o.continuation_ops = 4;
  return o;
}

//! Two writers over `keys`: disjoint (writer t takes keys t, t+2, ...) or overlapping (both
//! draw from the 8 keys around `hot`, half of them present after the setup, so the two
//! writers often have operations on one key in flight at once); inserts, upserts and
//! removes by the seed.
Threads real_writers(const std::vector<std::string>& keys, std::size_t per_thread,
                     bool overlapping, std::uint64_t seed, std::size_t hot = 10,
                     std::size_t writers = 2) {
  std::mt19937_64 rng(seed * 7919 + (overlapping ? 1 : 0));
  Threads w(writers);
  for (std::size_t t = 0; t < writers; ++t)
    for (std::size_t i = 0; i < per_thread; ++i) {
      std::size_t k = rng() % keys.size();
      if (!overlapping) k = k - k % writers + t;
      else k = hot - 4 + k % 8;
      if (k >= keys.size()) k = t;
      const Value v = 100 * (t + 1) + i;
      switch (rng() % 4) {
        case 0: case 1: w[t].push_back(ins(keys[k], v)); break;
        case 2: w[t].push_back(ups(keys[k], v)); break;
        default: w[t].push_back(rem(keys[k])); break;
      }
    }
  return w;
}

struct Row {
  std::uint64_t schedules = 0, points = 0, images = 0, findings = 0, switches = 0, stalls = 0;
  std::uint64_t replayed = 0;  // schedules whose last crash point a replay reached again
  double seconds = 0;
};

void run_real(const Subject& s, bool overlapping, Row* row) {
#if defined(__SANITIZE_ADDRESS__)
  const std::uint64_t n = env_count("WORT_CONC_CRASH_SCHEDULES", 4);  // see sanitizer_sample
#else
  const std::uint64_t n = env_count("WORT_CONC_CRASH_SCHEDULES", 12);
#endif
  // soak knobs: operations per writer, writers (2..4)
  const std::size_t per_writer = env_count("WORT_CONC_CRASH_OPS", 6);
  const std::size_t writers = std::clamp<std::size_t>(env_count("WORT_CONC_CRASH_WRITERS", 2), 2, 4);
  // ... keys (24) and keys inserted by the setup (the index's own default), and the coin's
  // switch probability in percent (50)
  const std::vector<std::string> keys =
      make_keys(Gen::random_u64, std::max<std::size_t>(16, env_count("WORT_CONC_CRASH_KEYS", 24)), 21);
  const std::size_t setup_n =
      std::min(keys.size() - 8, static_cast<std::size_t>(env_count("WORT_CONC_CRASH_SETUP", s.setup_keys)));
  crashsim::ScheduleOptions so;
  so.switch_probability = static_cast<double>(env_count("WORT_CONC_CRASH_SWITCH_PCT", 50)) / 100;
  std::vector<KvOp> setup;
  for (std::size_t i = 0; i < setup_n; ++i) setup.push_back(ins(keys[i], i));
  for (std::uint64_t seed = 1; seed <= n; ++seed) {
    const Options o = subject_options(s, seed);
    const auto t0 = std::chrono::steady_clock::now();
    const Threads w = real_writers(keys, per_writer, overlapping, seed, setup_n, writers);
    const Report r = run_concurrent_and_print(s.factory, setup, w, sanitizer_sample(o), so);
    row->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++row->schedules;
    row->points += r.crash_points;
    row->images += r.images;
    row->findings += r.findings.size();
    row->switches += r.switches;
    row->stalls += r.stalls;
    EXPECT_TRUE(r.correct()) << s.name << (overlapping ? " overlapping" : " disjoint") << ": "
                             << r.summary();
    EXPECT_GT(r.images, 0u);
    // Measured, not asserted (README "Replay": the locks that are not pm::cas_volatile —
    // the ART family's, FPTree's split log, FAST&FAIR's structure lock — are not pinned):
    // does a replay of the recorded stalls reach the last crash point again?
    Options ro = o;
    ro.replay = "seed=" + std::to_string(seed) + ",stalls=" + r.schedule +
                ",point=" + std::to_string(r.crash_points - 1) + ",choice=none";
    const Report again = run_concurrent_kv(s.factory, setup, w, ro, so);
    if (again.error.empty() && again.crash_points == 1 && again.schedule == r.schedule)
      ++row->replayed;
  }
  std::printf("[table] %-8s %-11s schedules %3llu  crash points %6llu  images %7llu  "
              "findings %3llu  switches %4llu  stalls %4llu  replayed %3llu  %7.1f s\n",
              s.name, overlapping ? "overlapping" : "disjoint",
              static_cast<unsigned long long>(row->schedules),
              static_cast<unsigned long long>(row->points),
              static_cast<unsigned long long>(row->images),
              static_cast<unsigned long long>(row->findings),
              static_cast<unsigned long long>(row->switches),
              static_cast<unsigned long long>(row->stalls),
              static_cast<unsigned long long>(row->replayed), row->seconds);
}

// The model of non-temporal commits matters: if a writer's movnti were visible to the other
// writer before its fence (as trace mode stores it), a ROWEX writer can build on the other
// one's commit while it is not durable — ART+CoW's second writer edits the copy the first
// has just published and acknowledges, and the image without the first one's commit loses
// the second one's write: a false LOST_ACK the hardware cannot produce. The same schedules
// with the model (the default) must be clean. Since the ART engine's inserts commit with
// cached stores (born-locked new nodes keep a second writer off them instead), only its
// removes, merges and updates are movnti: the first false finding came at seed 52 (an
// ART+CoW remove), so 64 schedules per index. Under ASan only ART+CoW's: the 128 WOART and
// ROART schedules find nothing under either model (so assert nothing beyond what the
// Release run asserts) and took 40 of this test's 76 s in make test's ASan run (36 s now).
TEST(ConcurrentCrash, MovntiVisibleBeforeItsFenceWouldGiveFalseFindings) {
  const std::uint64_t n = env_count("WORT_CONC_CRASH_NT_SCHEDULES", 64);
  std::size_t wrong = 0, right = 0;
#if defined(__SANITIZE_ADDRESS__)
  for (std::size_t which : {2u}) {  // artcow (removes): where the false findings come
#else
  for (std::size_t which : {1u, 2u, 5u}) {  // woart, artcow (removes), roart: movnti commits
#endif
    const Subject s = subjects()[which];
    const std::vector<std::string> keys = make_keys(Gen::random_u64, 16, 21);
    std::vector<KvOp> setup;
    for (std::size_t i = 0; i < 10; ++i) setup.push_back(ins(keys[i], i));
    crashsim::ScheduleOptions visible;
    visible.nt_visible_before_fence = true;
    for (std::uint64_t seed = 1; seed <= n; ++seed) {
      const Options o = subject_options(s, seed);
      const auto w = real_writers(keys, 5, seed % 2 == 0, seed, 10);
      const Report bad = run_concurrent_and_print(s.factory, setup, w, o, visible);
      if (!bad.correct()) {
        ++wrong;
        if (!run_concurrent_and_print(s.factory, setup, w, o).correct()) ++right;
      }
    }
  }
  EXPECT_GT(wrong, 0u) << "the unsound model found nothing: this test shows nothing any more";
  EXPECT_EQ(right, 0u);
}

// --- replay determinism over real indexes --------------------------------------------

//! The same schedule run twice — the second time with every writer pausing a seeded
//! 0..99 us before each traced event and each lock attempt (ScheduleOptions::jitter_seed),
//! then replayed to its last crash point from seed + recorded stalls: the three must agree
//! on the schedule string, and the two runs on crash points, images and switches. A
//! schedule that does not (printed) is run so once more, all three runs, and counts as not
//! repeated only if it differs again: beside a parallel sanitizer build about one schedule
//! in 300 still differs once (docs/experiments/2026-12-07-loose-writer-reads.md), while a
//! real source of timing, as the ungated variant below, differs again.
bool schedule_repeats(const Subject& s, const std::vector<KvOp>& setup,
                      const std::vector<std::string>& keys, bool overlapping,
                      std::size_t writers, std::uint64_t seed, crashsim::ScheduleOptions so) {
  Options o;
  o.seed = seed;
  o.pool_size = s.pool_size;
  o.exhaustive_cap = 4;  // the schedule is the point here, not the images
  o.random_samples = 1;
  o.continuation_ops = 1;
  o.second_crash = false;
  const Threads w = real_writers(keys, 6, overlapping, seed, s.setup_keys, writers);
  so.jitter_seed = 0;
  const Report a = run_concurrent_kv(s.factory, setup, w, o, so);
  so.jitter_seed = seed;
  const Report b = run_concurrent_kv(s.factory, setup, w, o, so);
  so.jitter_seed = 0;
  Options ro = o;
  ro.replay = "seed=" + std::to_string(seed) + ",stalls=" + a.schedule +
              ",point=" + std::to_string(a.crash_points - 1) + ",choice=none";
  const Report r = run_concurrent_kv(s.factory, setup, w, ro, so);
  EXPECT_TRUE(a.correct() && b.correct()) << a.summary() << " / " << b.summary();
  const bool same = a.error.empty() && b.error.empty() && r.error.empty() &&
                    a.schedule == b.schedule && a.crash_points == b.crash_points &&
                    a.images == b.images && a.switches == b.switches &&
                    r.schedule == a.schedule && r.crash_points == 1;
  if (same) return true;
  std::printf("[repeat] %s %s, %zu writers, seed %llu: stalls %s / %s (other timing) / %s "
              "(replay), crash points %llu / %llu, images %llu / %llu, switches %llu / "
              "%llu%s%s\n",
              s.name, overlapping ? "overlapping" : "disjoint", writers,
              static_cast<unsigned long long>(seed), a.schedule.c_str(), b.schedule.c_str(),
              r.schedule.c_str(), static_cast<unsigned long long>(a.crash_points),
              static_cast<unsigned long long>(b.crash_points),
              static_cast<unsigned long long>(a.images),
              static_cast<unsigned long long>(b.images),
              static_cast<unsigned long long>(a.switches),
              static_cast<unsigned long long>(b.switches),
              r.error.empty() ? "" : "; replay: ", r.error.c_str());
  return false;
}

//! schedule_repeats for seeds 1..n, each that differs given a second run: the schedules that
//! differed twice. Stops after `stop_after` of them.
std::size_t schedules_not_repeated(const Subject& s, bool overlapping, std::size_t writers,
                                   std::uint64_t n, crashsim::ScheduleOptions so,
                                   std::size_t stop_after = SIZE_MAX) {
  const std::vector<std::string> keys = make_keys(Gen::random_u64, 24, 21);
  std::vector<KvOp> setup;
  for (std::size_t i = 0; i < s.setup_keys; ++i) setup.push_back(ins(keys[i], i));
  std::size_t differ = 0;
  for (std::uint64_t seed = 1; seed <= n && differ < stop_after; ++seed) {
    if (schedule_repeats(s, setup, keys, overlapping, writers, seed, so)) continue;
    std::printf("[repeat] run again:\n");
    if (!schedule_repeats(s, setup, keys, overlapping, writers, seed, so)) ++differ;
  }
  return differ;
}

//! Three writers (two of them often spinning on one lock while the third holds it): WORT
//! (gen_lock: pm::cas_volatile), WOART (the ART engine's DRAM lock stripes), FAST&FAIR
//! (gen_lock leaves, its structure lock kit::WriterMutex) — every lock attempt announced by
//! pm::cas_volatile or pm::before_lock_attempt. Not FPTree: 2 of its 80 three-writer
//! replays in a soak missed their last crash point (README "Replay").
struct RepeatCell {
  std::size_t subject, writers;
};
constexpr RepeatCell kRepeatCells[] = {{0, 3}, {1, 3}, {3, 3}};  // wort, woart, fastfair

std::uint64_t repeat_schedules() {
#if defined(__SANITIZE_ADDRESS__)
  return env_count("WORT_CONC_CRASH_REPEAT_SCHEDULES", 4);
#else
  return env_count("WORT_CONC_CRASH_REPEAT_SCHEDULES", 12);
#endif
}

// Every lock attempt waits for its writer's turn (Tracer::on_before_cas), and a replay's
// recorded stall passes the turn once its writer blocks, as it had: a schedule — seed +
// recorded stalls — is the whole history. Run again under other timing, or replayed, it
// repeats exactly.
TEST(ConcurrentCrash, RealSchedulesRepeatExactlyUnderOtherTiming) {
  const std::uint64_t n = repeat_schedules();
  std::size_t differ = 0, runs = 0;
  for (const RepeatCell& c : kRepeatCells)
    for (bool overlapping : {false, true}) {
      differ += schedules_not_repeated(subjects()[c.subject], overlapping, c.writers, n, {});
      runs += n;
    }
  std::printf("[repeat] %zu of %zu schedules differ\n", differ, runs);
  EXPECT_EQ(differ, 0u);
}

// The broken variant (ScheduleOptions::ungated_cas): a loose writer takes a lock in
// parallel with the turn holder, so which of two writers gets it is OS timing — the same
// comparison must find schedules that do not repeat (stops at the third).
TEST(ConcurrentCrash, UngatedLockAttemptsDoNotRepeat) {
  crashsim::ScheduleOptions ungated;
  ungated.ungated_cas = true;
  std::size_t differ = 0;
  for (const RepeatCell& c : kRepeatCells)
    for (bool overlapping : {false, true})
      if (differ < 3)
        differ += schedules_not_repeated(subjects()[c.subject], overlapping, c.writers, 12,
                                         ungated, 3 - differ);
  std::printf("[repeat] ungated (broken): %zu schedules differ\n", differ);
  EXPECT_GT(differ, 0u) << "the broken variant repeated every schedule: the test shows nothing";
}

class ConcurrentCrashReal : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ConcurrentCrashReal, TwoWritersDisjointKeys) {
  const Subject s = subjects()[GetParam()];
  Row row;
  run_real(s, false, &row);
}

TEST_P(ConcurrentCrashReal, TwoWritersOverlappingKeys) {
  const Subject s = subjects()[GetParam()];
  Row row;
  run_real(s, true, &row);
}

INSTANTIATE_TEST_SUITE_P(Indexes, ConcurrentCrashReal, ::testing::Range<std::size_t>(0, 6),
                         [](const auto& info) { return std::string(subjects()[info.param].name); });

}  // namespace
}  // namespace wort::test
