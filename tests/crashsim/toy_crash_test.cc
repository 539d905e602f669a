// tests/crashsim/toy_crash_test.cc — the crash simulator is trusted only because it fails: it
// passes the correct toy hash table with no finding at all, and flags every deliberately
// broken variant for the reason the bug gives (tests/support/toy_hash.h lists them).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "crashsim/isolate.h"
#include "support/crash_ops.h"
#include "support/keygen.h"
#include "support/toy_hash.h"

namespace wort::crashsim {
namespace {

using test::ToyBug;
using test::ToyHash;

KvOp op(KvOp::Kind kind, std::uint64_t key, Value v = 0) {
  return KvOp{kind, test::u64_str(key), v};
}

//! 24 keys spread over the 16 buckets, so most chains are non-empty.
std::vector<KvOp> setup_ops() {
  std::vector<KvOp> s;
  for (std::uint64_t k = 1; k <= 24; ++k) s.push_back(op(KvOp::Kind::insert, k * 7, k));
  return s;
}

//! A mix of every operation and outcome: new keys, overwrites, updates of present and
//! absent keys, removes of present and absent keys, an insert of a present key.
std::vector<KvOp> mixed_ops(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<KvOp> ops;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t existing = (1 + rng() % 24) * 7;
    switch (i % 6) {
      case 0: ops.push_back(op(KvOp::Kind::insert, 1000 + i, 100 + i)); break;
      case 1: ops.push_back(op(KvOp::Kind::upsert, existing, 200 + i)); break;
      case 2: ops.push_back(op(KvOp::Kind::remove, existing)); break;
      case 3: ops.push_back(op(KvOp::Kind::update, existing, 300 + i)); break;
      case 4: ops.push_back(op(KvOp::Kind::upsert, 2000 + i, 400 + i)); break;
      case 5: ops.push_back(op(KvOp::Kind::insert, existing, 500 + i)); break;
    }
  }
  return ops;
}

std::vector<KvOp> inserts_only(std::size_t n) {
  std::vector<KvOp> ops;
  for (std::size_t i = 0; i < n; ++i) ops.push_back(op(KvOp::Kind::insert, 5000 + i, i));
  return ops;
}

Options base_options() {
  Options o;
  o.seed = 42;
  o.drain = true;
  o.commits = test::kOneCommitPerChange;
  return o;
}

//! base_options() with one oracle switched off.
Options without(bool Options::*oracle) {
  Options o = base_options();
  o.*oracle = false;
  return o;
}

//! A finding about the contents after recovery: an acknowledged write lost, an operation
//! half done, or a key that was never written.
bool contents_wrong(const Report& r) {
  return r.has("LOST_ACK") || r.has("NOT_ATOMIC") || r.has("EXTRA_KEY");
}

//! Prints and records how much was explored.
void record(const char* name, const Report& r) {
  const double rate = r.seconds > 0 ? static_cast<double>(r.images) / r.seconds : 0;
  std::cout << "[crashsim] " << name << ": " << r.summary() << "\n[crashsim] " << name << ": "
            << r.images << " crash states in " << r.seconds << " s = "
            << static_cast<std::uint64_t>(rate) << " crash states/s\n";
  ::testing::Test::RecordProperty("crash_points", std::to_string(r.crash_points));
  ::testing::Test::RecordProperty("crash_states", std::to_string(r.images));
  ::testing::Test::RecordProperty("crash_states_per_second", std::to_string(static_cast<std::uint64_t>(rate)));
}

template <ToyBug B>
Report run(const std::vector<KvOp>& ops, Options o = base_options()) {
  const auto setup = setup_ops();
  Report r = run_kv<ToyHash<B>>(setup, ops, o);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.images, 0u);
  record(std::string(test::toy_kind(B)).c_str(), r);
  return r;
}

bool has_lint(const Report& r) {
  return r.has("MISSING_FLUSH") || r.has("MISSING_FENCE") || r.has("UNTRACKED_STORE") ||
         r.has("REDUNDANT_FLUSH") || r.has("REDUNDANT_FENCE") || r.has("STORE_AFTER_COMMIT");
}

TEST(ToyCrash, CorrectTableHasNoFindingAtAll) {
  const Report r = run<ToyBug::none>(mixed_ops(1, 48));
  EXPECT_TRUE(r.clean()) << r.summary();
  EXPECT_EQ(r.ops, 48u);
  EXPECT_GT(r.crash_points, 48u);  // every op acknowledges, most fence too
}

TEST(ToyCrash, MissingFlushIsLintedAndLosesAnAcknowledgedInsert) {
  const Report r = run<ToyBug::missing_flush>(mixed_ops(2, 24));
  EXPECT_TRUE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_FALSE(r.has("MISSING_FENCE")) << r.summary();
  EXPECT_TRUE(r.has("LOST_ACK")) << r.summary();
  EXPECT_FALSE(r.correct());
}

TEST(ToyCrash, MissingFenceIsLintedAndLosesAnAcknowledgedInsert) {
  const Report r = run<ToyBug::missing_fence>(mixed_ops(3, 24));
  EXPECT_TRUE(r.has("MISSING_FENCE")) << r.summary();
  EXPECT_FALSE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_TRUE(r.has("LOST_ACK")) << r.summary();
}

TEST(ToyCrash, CommitBeforeDataIsCaughtByImagesAndTheCommitLints) {
  const Report r = run<ToyBug::commit_first>(mixed_ops(4, 24));
  // Every store is flushed and fenced by the acknowledgement, so the acknowledgement lints
  // cannot see the bug; the commit lints can: the node is written after the commit store
  // (STORE_AFTER_COMMIT) and the next commit goes out with its write-back unfenced.
  EXPECT_FALSE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_TRUE(r.has("STORE_AFTER_COMMIT")) << r.summary();
  EXPECT_TRUE(r.has("MISSING_FENCE")) << r.summary();
  // The image where the bucket points at the unwritten node loses the rest of the chain
  // (or shows the garbage node as a key nobody put there).
  EXPECT_TRUE(r.has("LOST_ACK") || r.has("EXTRA_KEY")) << r.summary();
}

TEST(ToyCrash, Torn16ByteWriteIsCaughtByLinePrefixes) {
  const Report r = run<ToyBug::torn16>(inserts_only(12));
  EXPECT_FALSE(has_lint(r)) << r.summary();
  EXPECT_TRUE(r.has("LOST_ACK")) << r.summary();
}

TEST(ToyCrash, Torn16ByteWriteNeedsPrefixesInsideALine) {
  // Without enumeration and random picks, images apply each line's log whole or not at all,
  // and a {head, count} pair in one line is never torn: the bug must go unseen. This shows
  // the finding above comes from intra-line prefixes, the Px86 part of the model.
  Options o = base_options();
  o.exhaustive_cap = 1;
  o.random_samples = 0;
  o.commits.reset();  // torn16 writes its commit by hand (two stores): no commit store
  const Report r = run<ToyBug::torn16>(inserts_only(12), o);
  EXPECT_TRUE(r.correct()) << r.summary();
}

TEST(ToyCrash, LeakedDeadNodeIsCaughtByDrain) {
  const Report r = run<ToyBug::leak_dead>(mixed_ops(5, 24));
  EXPECT_TRUE(r.has("DRAIN")) << r.summary();
  // The dead node is reachable, so the tracing allocator keeps it: the audit is satisfied
  // and the contents are right. Only draining the table shows the block is never reclaimed.
  EXPECT_FALSE(r.has("AUDIT")) << r.summary();
  EXPECT_FALSE(contents_wrong(r)) << r.summary();
  EXPECT_FALSE(has_lint(r)) << r.summary();

  EXPECT_TRUE(run<ToyBug::leak_dead>(mixed_ops(5, 24), without(&Options::drain)).correct());
}

TEST(ToyCrash, PlainStoreToPoolIsAnUntrackedStore) {
  const Report r = run<ToyBug::untracked>(mixed_ops(6, 24));
  EXPECT_TRUE(r.has("UNTRACKED_STORE")) << r.summary();
}

TEST(ToyCrash, RedundantFlushAndFenceArePerformanceFindingsOnly) {
  const Report r = run<ToyBug::redundant>(mixed_ops(7, 24));
  EXPECT_TRUE(r.has("REDUNDANT_FLUSH")) << r.summary();
  EXPECT_TRUE(r.has("REDUNDANT_FENCE")) << r.summary();
  EXPECT_TRUE(r.correct()) << r.summary();
  EXPECT_FALSE(r.clean());
}

TEST(ToyCrash, LeakOfTheRunningProgramIsCaughtByTheAudit) {
  const Report r = run<ToyBug::no_free>(mixed_ops(8, 24));
  // Recovery's trace frees the unreachable node, so crash images look fine until the
  // recovered table removes a key itself: the audit after continuation sees the leak, and
  // so does the audit of the traced run.
  EXPECT_TRUE(r.has("AUDIT")) << r.summary();
  EXPECT_TRUE(r.has("LIVE")) << r.summary();
  EXPECT_FALSE(contents_wrong(r)) << r.summary();
}

TEST(ToyCrash, RecoveryThatIsNotCrashSafeIsCaughtBySecondCrash) {
  const Report r = run<ToyBug::unsafe_repair>(mixed_ops(9, 24));
  EXPECT_TRUE(r.has("SECOND_CRASH")) << r.summary();
  // One crash alone is always repaired correctly.
  EXPECT_FALSE(contents_wrong(r)) << r.summary();
  EXPECT_FALSE(has_lint(r)) << r.summary();
  EXPECT_TRUE(
      run<ToyBug::unsafe_repair>(mixed_ops(9, 24), without(&Options::second_crash)).correct());

  // Its replay string names both crashes and reproduces the finding alone.
  const Finding* second = nullptr;
  for (const Finding& f : r.findings)
    if (f.kind == "SECOND_CRASH") second = &f;
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second->replay.find("rpoint="), std::string::npos) << second->replay;
  Options replay = base_options();
  replay.replay = second->replay;
  const Report again = run<ToyBug::unsafe_repair>(mixed_ops(9, 24), replay);
  EXPECT_EQ(again.images, 2u);  // the image, and the one crashed during its recovery
  EXPECT_TRUE(again.has("SECOND_CRASH")) << again.summary();
}

TEST(ToyCrash, ReplayReproducesAFindingFromItsString) {
  const auto ops = mixed_ops(3, 24);
  const Report r = run<ToyBug::missing_fence>(ops);
  const Finding* lost = nullptr;
  for (const Finding& f : r.findings)
    if (f.kind == "LOST_ACK") lost = &f;
  ASSERT_NE(lost, nullptr) << r.summary();
  std::cout << "[crashsim] replaying " << lost->replay << "\n";

  Options o = base_options();
  o.replay = lost->replay;
  const Report again = run<ToyBug::missing_fence>(ops, o);
  EXPECT_EQ(again.crash_points, 1u);
  EXPECT_EQ(again.images, 1u);
  ASSERT_TRUE(again.has("LOST_ACK")) << again.summary();
  bool same = false;
  for (const Finding& f : again.findings) same |= f.kind == "LOST_ACK" && f.replay == lost->replay;
  EXPECT_TRUE(same) << again.summary();
  EXPECT_FALSE(again.has("MISSING_FENCE")) << "a replay runs no lints";
}

TEST(ToyCrash, BadReplayStringIsAnError) {
  Options o = base_options();
  o.replay = "seed=1,point=x";
  const auto setup = setup_ops();
  const auto ops = inserts_only(2);
  const Report r = run_kv<ToyHash<ToyBug::none>>(setup, ops, o);
  EXPECT_FALSE(r.error.empty());
  EXPECT_FALSE(r.correct());

  o.replay = "seed=1,point=100000,choice=none";  // far past the last crash point
  const Report never = run_kv<ToyHash<ToyBug::none>>(setup, ops, o);
  EXPECT_NE(never.error.find("never came"), std::string::npos) << never.error;

  o.replay = "seed=1,point=0,choice=0.0.0.0.0.0.0.0.0";  // more lines than are dirty
  const Report misfit = run_kv<ToyHash<ToyBug::none>>(setup, ops, o);
  EXPECT_NE(misfit.error.find("does not fit"), std::string::npos) << misfit.error;
}

TEST(ToyCrash, LintsOnlyModeBuildsNoImages) {
  Options o = base_options();
  o.explore = false;
  const auto setup = setup_ops();
  const auto ops = mixed_ops(2, 24);
  const Report r = run_kv<ToyHash<ToyBug::missing_flush>>(setup, ops, o);
  EXPECT_EQ(r.images, 0u);
  EXPECT_TRUE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_FALSE(r.has("LOST_ACK"));
}


// --- the ordering lint at the commit, the store-after-commit lint, the commit oracle ------

// The node is written back but not fenced when the commit store goes out: the commit may
// become durable first. The commit's own fence hides this from the acknowledgement lints.
TEST(ToyCrash, UnfencedPublishIsLintedAtTheCommit) {
  const Report r = run<ToyBug::unfenced_publish>(inserts_only(6));
  EXPECT_TRUE(r.has("MISSING_FENCE")) << r.summary();
  EXPECT_NE(r.findings.front().detail.find("commit store"), std::string::npos) << r.summary();
  EXPECT_FALSE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_FALSE(r.correct());
}

// A store after the commit (here harmless: the count is advisory) is flagged by the lint alone.
TEST(ToyCrash, StoreAfterCommitIsLinted) {
  const Report r = run<ToyBug::store_after_commit>(mixed_ops(4, 12));
  EXPECT_TRUE(r.has("STORE_AFTER_COMMIT")) << r.summary();
  EXPECT_FALSE(r.has("LOST_ACK") || r.has("NOT_ATOMIC") || r.has("COMMIT_COUNT")) << r.summary();
}

// Two commit stores for one insert: only the commit oracle sees it.
TEST(ToyCrash, ExtraCommitIsCounted) {
  const Report r = run<ToyBug::extra_commit>(mixed_ops(5, 12));
  EXPECT_TRUE(r.has("COMMIT_COUNT")) << r.summary();
  EXPECT_FALSE(r.has("LOST_ACK") || r.has("NOT_ATOMIC")) << r.summary();
  EXPECT_FALSE(r.correct());
}

// A writer's repair after a crash is linted too: unsafe_repair's recovery resets a bucket
// and persists it; with a missing flush injected nowhere else, the lints after a crash must
// still run (they flag its redundant work at least: the repair fence orders only the reset).
TEST(ToyCrash, LintsRunDuringRecoveryAndContinuation) {
  Options o = base_options();
  const Report r = run<ToyBug::missing_flush>(inserts_only(2), o);
  bool after = false;
  for (const Finding& f : r.findings)
    after |= f.kind == "MISSING_FLUSH" && f.detail.find("after a crash") != std::string::npos;
  EXPECT_TRUE(after) << r.summary();
  o.lints_after_crash = false;
  const Report quiet = run<ToyBug::missing_flush>(inserts_only(2), o);
  for (const Finding& f : quiet.findings)
    EXPECT_EQ(f.detail.find("after a crash"), std::string::npos) << f.detail;
}


// --- bounds: a recovery that hangs, eats memory or overflows its stack is a finding --------

TEST(ToyCrash, HangingRecoveryIsAFindingWithAReplay) {
  Options o = base_options();
  o.image_seconds = 0.5;
  const Report r = run<ToyBug::hang_recovery>(inserts_only(4), o);
  ASSERT_TRUE(r.has("RECOVERY_HUNG")) << r.summary();
  EXPECT_NE(r.findings.back().replay.find("point="), std::string::npos) << r.summary();
  // The replay names the image: replaying it hangs again (bounded the same way).
  Options again = o;
  again.replay = r.findings.back().replay;
  EXPECT_TRUE(run<ToyBug::hang_recovery>(inserts_only(4), again).has("RECOVERY_HUNG"));
}

TEST(ToyCrash, MemoryExhaustingRecoveryIsAFinding) {
  if (!memory_budget_enforced()) GTEST_SKIP() << "no RLIMIT_AS under sanitizers";
  Options o = base_options();
  o.memory_budget_mb = 1024;
  const Report r = run<ToyBug::oom_recovery>(inserts_only(4), o);
  EXPECT_TRUE(r.has("RECOVERY_HUNG") || r.has("RECOVERY_CRASHED")) << r.summary();
}

TEST(ToyCrash, RunawayRecursionInRecoveryIsAFinding) {
  const Report r = run<ToyBug::recurse_recovery>(inserts_only(4));
  ASSERT_TRUE(r.has("RECOVERY_CRASHED")) << r.summary();
  EXPECT_FALSE(r.findings.back().replay.empty());
}

}  // namespace
}  // namespace wort::crashsim
