// The crash simulator's dirty-read oracle (crashsim::Options::dirty_reads; Simulator read
// points): at every event of every traced operation, another thread looks the in-flight key
// up, as a lock-free reader running at that moment could; a reader that sees the new state
// before it is durable is a DIRTY_READ (a client could act on a write that a crash then
// loses). Non-temporal stores are hidden from that reader until their fence, since a movnti
// reaches other cores only through the memory controller.
//
// The broken variant: the toy hash commits with regular stores (pm::commit / pm::publish:
// store, then write-back and fence — visible before durable), so the oracle must find dirty
// reads there. The indexes whose readers take no lock — WORT, WOART, ART+CoW (the ART engine)
// and ROART — must show none, on every operation path their crash tests cover (grow, shrink,
// splits, merges, end-of-key slots, leaf arrays). ROART commits with pm::commit_nt /
// publish_nt; WORT's and the ART engine's inserts commit with cached stores (pm::publish;
// their removes and updates stay non-temporal) and their readers help a leaf still marked
// fresh (write back the words that may hold its publishing store, fence) before they return
// it: the oracle traces the reader's write-backs and fences, and each with readers that
// ignore the mark (g_broken_reader_ignores_fresh) must be caught.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/roart/roart_tree.h"
#include "index/wort/wort_tree.h"
#include "support/crash_ops.h"
#include "support/faults.h"
#include "support/keygen.h"
#include "support/art_engine_trees.h"
#include "support/toy_hash.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

crashsim::Options reads_only() {
  crashsim::Options o;
  o.dirty_reads = true;
  o.explore = false;  // the crash images are the crash tests' business: here only the reads
  o.pool_size = 4u << 20;
  return o;
}

std::size_t count_reads(const crashsim::Report& r) {
  return r.count("DIRTY_READ") + r.count("TORN_READ");
}

//! Inserts that grow one node through every type, upserts, updates, then removes that
//! shrink and merge it; then a sampled mix over keys with shared prefixes and prefix chains.
std::vector<KvOp> node_life() {
  std::vector<KvOp> v;
  for (unsigned i = 0; i < 60; ++i) v.push_back(ins(u64_str(0x1000 + i), i));
  for (unsigned i = 0; i < 60; i += 7) v.push_back(ups(u64_str(0x1000 + i), 100 + i));
  for (unsigned i = 3; i < 60; i += 11) v.push_back(upd(u64_str(0x1000 + i), 200 + i));
  v.push_back(ins(u64_str(0x1000) + "tail", 7));     // a key ending inside a path
  v.push_back(ins(u64_str(0x10000000), 8));          // a prefix split
  for (unsigned i = 0; i < 60; ++i) v.push_back(rem(u64_str(0x1000 + i)));
  return v;
}

void expect_no_dirty_reads(const crashsim::Factory& f) {
  {
    SCOPED_TRACE("node life");
    const crashsim::Report r = run_and_print(f, {}, node_life(), reads_only());
    EXPECT_TRUE(r.correct()) << r.summary();
    EXPECT_EQ(count_reads(r), 0u) << r.summary();
    EXPECT_GT(r.ops, 100u);
    // The reader saw the new state of each operation at least when it returned (every op of
    // this list changes its key), and each time the durable image was recovered and agreed.
    // Once per operation, unless the reader helped (WORT's fresh leaves: it made the state
    // durable only in its own hypothetical run, so the operation's later points are read too).
    EXPECT_GE(r.read_checks, r.ops) << r.summary();
  }
  for (Gen g : {Gen::shared_prefix, Gen::prefix_chains, Gen::random_bytes}) {
    SCOPED_TRACE(std::string(to_string(g)));
    const MixedBatch b = sampled_mix(make_keys(g, 400, 23), 300, 120);
    const crashsim::Report r = run_and_print(f, b.setup, b.ops, reads_only());
    EXPECT_TRUE(r.correct()) << r.summary();
    EXPECT_EQ(count_reads(r), 0u) << r.summary();
    EXPECT_GT(r.read_checks, b.ops.size() / 4) << r.summary();
  }
}

TEST(DirtyReadOracle, CatchesCommitsWithRegularStores) {
  // ToyHash<none> is crash-consistent (its own crash tests are clean) but publishes with a
  // regular store that a reader sees before its write-back and fence.
  const crashsim::Report r =
      run_and_print(crashsim::factory_of<ToyHash<ToyBug::none>>(), {},
                    {ins(u64_str(1), 1), ins(u64_str(2), 2), ups(u64_str(1), 3), rem(u64_str(2))},
                    reads_only());
  EXPECT_TRUE(r.has("DIRTY_READ")) << r.summary();
  EXPECT_EQ(r.count("TORN_READ"), 0u) << r.summary();
  // Every one of the four operations is seen before it is durable (one finding per op).
  EXPECT_EQ(r.count("DIRTY_READ"), 4u) << r.summary();
}

TEST(DirtyReadOracle, NoneInTheArtEngineTrees) {
  expect_no_dirty_reads(crashsim::factory_of<woart::Woart>());
  expect_no_dirty_reads(crashsim::factory_of<artcow::ArtCow>());
}

TEST(DirtyReadOracle, NoneInWort) { expect_no_dirty_reads(crashsim::factory_of<WortTree>()); }

#if WORT_FAULTS
TEST(DirtyReadOracle, CatchesWortReadersIgnoringTheFreshMark) {
  FaultSwitch broken(wort_index::g_broken_reader_ignores_fresh);
  const std::vector<KvOp> ops = node_life();
  const crashsim::Report r =
      run_and_print(crashsim::factory_of<WortTree>(), {}, ops, reads_only());
  EXPECT_EQ(r.count("TORN_READ"), 0u) << r.summary();
  // Every insert is read between its cached commit store and that store's fence: 60 + 2
  // inserts in node_life, one finding each (capped per kind by the report: kMaxPerKind).
  EXPECT_TRUE(r.has("DIRTY_READ")) << r.summary();
  // Upserts, updates and removes still commit non-temporally: not dirty.
  for (const crashsim::Finding& f : r.findings) {
    if (f.kind == "DIRTY_READ") {
      EXPECT_NE(f.detail.find("insert"), std::string::npos) << f.detail;
    }
  }
}

// The ART engine's inserts commit with cached stores too (src/index/art_engine/README.md, "No
// dirty reads"): readers that ignore a new leaf's fresh mark
// (art_engine::g_broken_reader_ignores_fresh) return it before its insert is durable.
TEST(DirtyReadOracle, CatchesArtEngineReadersIgnoringTheFreshMark) {
  FaultSwitch broken(art_engine::g_broken_reader_ignores_fresh);
  for (const crashsim::Factory& f :
       {crashsim::factory_of<woart::Woart>(), crashsim::factory_of<artcow::ArtCow>()}) {
    const crashsim::Report r = run_and_print(f, {}, node_life(), reads_only());
    EXPECT_EQ(r.count("TORN_READ"), 0u) << r.summary();
    EXPECT_TRUE(r.has("DIRTY_READ")) << r.summary();
    // Upserts, updates and removes still commit non-temporally: not dirty.
    for (const crashsim::Finding& fd : r.findings) {
      if (fd.kind == "DIRTY_READ") {
        EXPECT_NE(fd.detail.find("insert"), std::string::npos) << fd.detail;
      }
    }
  }
}
#endif  // WORT_FAULTS

TEST(DirtyReadOracle, NoneInRoart) { expect_no_dirty_reads(crashsim::factory_of<roart::Roart>()); }

}  // namespace
}  // namespace wort::test
