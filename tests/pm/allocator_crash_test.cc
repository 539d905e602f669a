// tests/pm/allocator_crash_test.cc — crash tests of every persistent allocator path
// (src/pm/allocator.cc, chunk_table.h), driven through the toy hash table on a pool of 4 KiB
// chunks, where a node of a key over ~1000 bytes is a large block of whole chunks:
//
//   carve        a fresh small chunk and fresh large spans above the high-water mark
//                (chunk-table entry persisted, then the mark)
//   span split   a freed 2-chunk span re-carved as 1 + 1 (remainder head first, taken last)
//   merge        two freed neighbouring 1-chunk spans merged in DRAM when the pool is
//                full, re-carved as one 2-chunk span
//   recovery     every image of the above is recovered by Allocator::recover (tracing), a
//                second crash inside recovery is recovered again, and the continuation ops
//                allocate and free in the recovered pool
//
// Each must be correct with no lint. That each fails when its persist or its order is
// removed is shown by `make mutate` (tools/mutations/allocator.txt: the carve entry's and
// the mark's persists dropped, the split's two writes swapped, ...), whose report names the
// test that kills each mutation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "support/crash_ops.h"
#include "support/toy_hash.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

constexpr std::uint32_t kChunk = 4096;

//! A key of `len` bytes, distinct per `tag`.
std::string big(char tag, std::size_t len) {
  std::string k(len, tag);
  k[0] = 'K';
  return k;
}

crashsim::Options small_chunks(std::uint64_t chunks) {
  crashsim::Options o;
  o.seed = 17;
  o.chunk_size = kChunk;
  o.pool_size = chunks * kChunk;
  o.exhaustive_cap = 32;
  o.random_samples = 4;
  o.drain = true;
  return o;
}

crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     const crashsim::Options& o) {
  return run_and_print(crashsim::factory_of<ToyHashCorrect>(), setup, ops, o);
}

TEST(AllocatorCrash, CarveSmallChunkAndLargeSpans) {
  crashsim::Options o = small_chunks(32);
  o.trace_create = true;  // the toy root's chunk is the first carve
  const auto r = run({}, {ins("small", 1), ins(big('a', 3000), 2), ins(big('b', 4096), 3),
                          ins("small2", 4)},
                     o);
  EXPECT_TRUE(r.correct()) << r.summary();
  EXPECT_GT(r.images, 0u);
}

// A 4096-byte key's node (4120 bytes) takes 2 chunks; removed, its span is free; a 2000-byte
// key's node takes 1 chunk of it (split: remainder head first), the next takes the rest.
// The chunk table holds 8 entries per line: with the taken and the remainder head in one
// line, the taken head's write-back covers both and a lost write-back or a wrong order of
// the two cannot show. So the span is placed at every position modulo 8 (0..7 one-chunk
// fillers before it): one of them puts the two heads in different lines.
TEST(AllocatorCrash, SplitAFreedSpan) {
  for (int fillers = 0; fillers < 8; ++fillers) {
    SCOPED_TRACE(std::to_string(fillers) + " one-chunk nodes before the span");
    std::vector<KvOp> setup = {ins("root-class", 1)};
    for (int i = 0; i < fillers; ++i) setup.push_back(ins(big(static_cast<char>('a' + i), 3000), 2));
    setup.push_back(ins(big('s', 4096), 2));
    setup.push_back(rem(big('s', 4096)));
    crashsim::Options o = small_chunks(32);
    o.exhaustive_cap = 16;
    o.random_samples = 2;
    o.continuation_ops = 3;
    o.drain = false;
    EXPECT_CLEAN(run(setup, {ins(big('x', 2000), 3), ins(big('y', 2000), 4)}, o));
  }
}

// A full pool: two neighbouring 1-chunk spans freed, then a 2-chunk node: the allocator
// reclaims and merges free spans (DRAM) and re-carves the merged span.
TEST(AllocatorCrash, MergeFreeSpansInAFullPool) {
  const std::uint64_t chunks = 12;
  std::vector<KvOp> setup = {ins("root-class", 1)};
  // Fill every chunk: the small chunk holding the root and small nodes, then 1-chunk nodes.
  for (char c = 'a'; c < 'a' + 16; ++c) setup.push_back(ins(big(c, 3000), 2));
  // Inserts past the end fail with out_of_space in setup (LIVE) — so count what fits first.
  crashsim::Options probe = small_chunks(chunks);
  probe.explore = false;
  probe.lints = false;
  std::vector<KvOp> fit = {setup.front()};
  for (std::size_t i = 1; i < setup.size(); ++i) {
    std::vector<KvOp> trial = fit;
    trial.push_back(setup[i]);
    const auto r = crashsim::run_kv(crashsim::factory_of<ToyHashCorrect>(), trial, {}, probe);
    if (!r.correct()) break;
    fit = trial;
  }
  ASSERT_GE(fit.size(), 4u) << "the pool holds too few big nodes";
  // Free two neighbours (the 2nd and 3rd big node), then ask for 2 chunks.
  fit.push_back(rem(fit[2].key));
  fit.push_back(rem(fit[3].key));
  const auto r = run(fit, {ins(big('z', 4096), 5), rem(big('z', 4096))}, small_chunks(chunks));
  EXPECT_CLEAN(r);
  // The 2-chunk insert must have succeeded (no LIVE finding): it needed the merge.
  EXPECT_FALSE(r.has("LIVE")) << r.summary();
}

// Recovery of old chunks by tracing, then a second generation of allocations: the recovered
// pool hands out nothing from old chunks until the trace, then reuses them.
TEST(AllocatorCrash, RecoveryThenReuse) {
  crashsim::Options o = small_chunks(32);
  o.continuation_ops = 12;
  const std::vector<KvOp> setup = {ins("root-class", 1), ins(big('r', 3000), 2),
                                   ins(big('q', 4096), 3)};
  EXPECT_CLEAN(run(setup, {rem(big('r', 3000)), ins(big('p', 3000), 4), rem(big('q', 4096)),
                           ins(big('o', 2000), 5)},
                   o));
}

}  // namespace
}  // namespace wort::test
