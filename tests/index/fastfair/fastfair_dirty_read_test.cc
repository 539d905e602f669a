// FAST&FAIR under the crash simulator's dirty-read oracle (crashsim::Options::dirty_reads;
// tests/crashsim/dirty_read_test.cc runs it on the ART engine trees, WORT and ROART, and shows it
// catching regular-store commits on its toy): at every event of every traced operation
// another thread looks the in-flight key up, as a lock-free reader could, and must never see
// a state a crash could still take back. FAST&FAIR's readers take no lock; every commit is
// non-temporal (README "No dirty reads"), and since the same-line rule an insert's commit
// shares its line with an unfenced cached store (the new record's pointer), which this
// checks from the reader's side. 256-byte nodes, so the operations below split leaves, inner
// nodes and the root, merge, borrow and collapse.
//
// Shown by hand to fail: with fast_insert's two commits replaced by pm::publish / pm::commit
// (a cached store, then write-back and fence), the inserts report DIRTY_READ.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/fastfair/fastfair_tree.h"
#include "support/crash_ops.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

crashsim::Factory fastfair_256() { return factory_with_word0<FastFairTree>(256); }

crashsim::Options reads_only() {
  crashsim::Options o;
  o.dirty_reads = true;
  o.explore = false;  // crash images are fastfair_crash_test's business: here only the reads
  o.pool_size = 4u << 20;
  return o;
}

std::size_t count_reads(const crashsim::Report& r) {
  return r.count("DIRTY_READ") + r.count("TORN_READ");
}

TEST(FastFairDirtyRead, NoneOnAnyCommitPath) {
  {
    SCOPED_TRACE("grow, update, shrink");
    std::vector<KvOp> v;
    for (unsigned i = 0; i < 300; ++i) v.push_back(ins(u64_str((i * 7919u) % 1000u), i));
    for (unsigned i = 0; i < 300; i += 7) v.push_back(ups(u64_str((i * 7919u) % 1000u), i + 1));
    for (unsigned i = 3; i < 300; i += 11) v.push_back(upd(u64_str((i * 7919u) % 1000u), 5));
    for (unsigned i = 0; i < 300; ++i) v.push_back(rem(u64_str((i * 7919u) % 1000u)));
    const crashsim::Report r = run_and_print(fastfair_256(), {}, v, reads_only());
    EXPECT_TRUE(r.correct()) << r.summary();
    EXPECT_EQ(count_reads(r), 0u) << r.summary();
    EXPECT_EQ(r.read_checks, r.ops) << r.summary();
    EXPECT_GT(r.ops, 600u);
  }
  for (Gen g : {Gen::random_u64, Gen::random_bytes}) {  // random_bytes: key blocks
    SCOPED_TRACE(std::string(to_string(g)));
    const MixedBatch b = sampled_mix(make_keys(g, 600, 29), 400, 300);
    const crashsim::Report r = run_and_print(fastfair_256(), b.setup, b.ops, reads_only());
    EXPECT_TRUE(r.correct()) << r.summary();
    EXPECT_EQ(count_reads(r), 0u) << r.summary();
    EXPECT_GT(r.read_checks, b.ops.size() / 4) << r.summary();
  }
}

}  // namespace
}  // namespace wort::test
