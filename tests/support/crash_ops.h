// tests/support/crash_ops.h — shorthand for the crash tests of the index kinds
// (crashsim::run_kv): operation builders, a run that prints what it explored, a sampled
// mixed batch, and EXPECT_CLEAN (correct, no lint, at least one crash state explored).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crashsim/harness.h"
#include "wort/key.h"

namespace wort::test {

//! The value stored for a test's value `v`: both 32-bit halves non-zero and different for
//! different v, so a value word written as two 4-byte stores shows as a torn value in a
//! crash image (small values have a zero high half before and after: tearing them is
//! invisible). Distinct v give distinct values.
constexpr Value wide(Value v) { return v + (v + 1) * 0x0000000100000001ull; }

inline crashsim::KvOp ins(std::string k, Value v = 1) {
  return {crashsim::KvOp::Kind::insert, std::move(k), wide(v)};
}
inline crashsim::KvOp ups(std::string k, Value v) {
  return {crashsim::KvOp::Kind::upsert, std::move(k), wide(v)};
}
inline crashsim::KvOp upd(std::string k, Value v) {
  return {crashsim::KvOp::Kind::update, std::move(k), wide(v)};
}
inline crashsim::KvOp rem(std::string k) { return {crashsim::KvOp::Kind::remove, std::move(k), 0}; }

// --- the commit oracle's tables (crashsim::Options::commits) -----------------------------
// How many commit stores each acknowledged operation of an index makes, from its README's
// commit table. A new index adds its row to commit_table_for() (crash_ops.cc) when it
// registers; run_and_print() then checks every operation of its crash tests against it.

//! WORT, WOART, ART+CoW and the toy hash: every operation that changes the index commits
//! with exactly one 8-byte store; a no-op (insert of a present key, update/remove of an
//! absent one) makes none; Index::create commits once (Pool::set_root).
inline constexpr crashsim::CommitTable kOneCommitPerChange{
    .insert = {1, 1}, .upsert = {1, 1}, .update = {1, 1}, .remove = {1, 1},
    .noop = {0, 0}, .create = {1, 1}};

//! FAST&FAIR (src/index/fastfair/README.md, "The commit store of every operation"): an
//! update, or an upsert of a present key, commits once (the value word); an insert once plus
//! two per split (cut, then the key into one half; a root split: the anchor, then the key)
//! and one parent insert; a remove once (the slot dies) plus its rebalancing (merge: detach,
//! append, unlink; borrow: detach, cut or append + link, parent insert; root collapse), and
//! an insert or remove that meets a sibling missing from its parent after a crash first
//! links it (a parent insert: commits). Those counts grow with the height, so only the
//! lower bound is checked for insert / upsert / remove (255: no upper bound). A no-op makes
//! none (its descent follows a sibling as a reader does, repairing nothing that commits).
inline constexpr crashsim::CommitTable kFastFairCommits{
    .insert = {1, 255}, .upsert = {1, 255}, .update = {1, 1}, .remove = {1, 255},
    .noop = {0, 0}, .create = {1, 1}};

//! ROART (src/index/roart/README.md, "Commit stores"): every change commits with one
//! non-temporal 8-byte store (pm::commit_nt / publish_nt / commit_nt_sharing_fence).
inline constexpr crashsim::CommitTable kRoartCommits{
    .insert = {1, 1}, .upsert = {1, 1}, .update = {1, 1}, .remove = {1, 1},
    .noop = {0, 0}, .create = {1, 1}};

//! The table of an index kind, or none (then COMMIT_COUNT is not checked).
std::optional<crashsim::CommitTable> commit_table_for(std::string_view kind);

//! crashsim::run_kv (with Options::commits from commit_table_for(tree.kind) unless set), then one line "[<kind> crash] <summary>" on stdout.
crashsim::Report run_and_print(const crashsim::Factory& tree,
                               const std::vector<crashsim::KvOp>& setup,
                               const std::vector<crashsim::KvOp>& ops, const crashsim::Options& o);

//! crashsim::run_concurrent_kv (Options::commits as run_and_print), then one line
//! "[<kind> concurrent crash] <summary>" on stdout.
crashsim::Report run_concurrent_and_print(const crashsim::Factory& tree,
                                          const std::vector<crashsim::KvOp>& setup,
                                          const std::vector<std::vector<crashsim::KvOp>>& threads,
                                          const crashsim::Options& o,
                                          const crashsim::ScheduleOptions& s = {});

//! For the long sampled tests that expect no finding (sampled mixes, long merge chains):
//! under AddressSanitizer an image costs 10-20x its Release time (those tests took 5-7 min
//! each there), so the structured pairs come from at most 8 lines and a point gets at most 8
//! enumerated and 2 random images, and DRAIN (removing every key of a recovered image: half
//! of FastFairCrash.InnerMergesAndCollapse's 107 s under ASan) runs on one image in four.
//! The Release run explores the full sample; the ASan run is there for memory errors on the
//! recovery paths, which these images still reach. Not for a test that must catch a bug:
//! its images stay as the test sets them.
inline crashsim::Options sanitizer_sample(crashsim::Options o) {
#if defined(__SANITIZE_ADDRESS__)
  o.pair_lines = std::min<std::size_t>(o.pair_lines, 8);
  o.exhaustive_cap = std::min<std::size_t>(o.exhaustive_cap, 8);
  o.random_samples = std::min<std::size_t>(o.random_samples, 2);
  o.drain_every = std::max<std::size_t>(o.drain_every, 4);
#endif
  return o;
}

//! Pool offsets of a real pool's size: the chunk area (every block an index links) past a
//! gap nobody writes and the simulator skips (crashsim::Options::chunk_area_offset,
//! src/crashsim/sparse.h). bytes_below 0: the chunk area at 2^32 + 64 KiB, every block
//! above 2^32, so a commit store from null to a block, or back, changes the word's high
//! half, and either half alone (below 2^32 + 64 KiB) names the gap, never a block. bytes_below
//! at a block (a multiple of 64): the chunk area at 2^32 - bytes_below, the blocks before it
//! below 2^32 and the rest above, so a commit store that swaps one for the other changes the
//! high half too. A commit word split into two 4-byte stores then shows torn in a crash
//! image, which the small pools of the other crash tests never show (there every offset's
//! high half is 0).
inline crashsim::Options above_4gib(crashsim::Options o = {}, std::uint64_t bytes_below = 0) {
  constexpr std::uint64_t k4GiB = std::uint64_t{1} << 32;
  o.chunk_area_offset = bytes_below == 0 ? k4GiB + (64u << 10) : k4GiB - bytes_below;
  return o;
}

//! The split points of a high-offset run: a dry run (no simulator, a pool of o's size)
//! creates the index, applies `setup`, then records every 8-byte commit store of `ops`; for
//! each that swaps one block for another (both words name blocks: tagged words by their low
//! 48 bits), the offset inside the chunk area of the higher block. above_4gib at that
//! offset puts the two blocks on either side of 2^32. Ascending, without repeats. The
//! allocator is deterministic, so the crash run's pool holds the same blocks.
std::vector<std::uint64_t> commit_split_points(const crashsim::Factory& tree,
                                               const std::vector<crashsim::KvOp>& setup,
                                               const std::vector<crashsim::KvOp>& ops,
                                               const crashsim::Options& o);

//! run_and_print in the geometries of above_4gib: every block above 2^32, then split at up
//! to 4 of commit_split_points (spread over them; under ASan 1, and sanitizer_sample).
std::vector<crashsim::Report> run_above_4gib(const crashsim::Factory& tree,
                                             const std::vector<crashsim::KvOp>& setup,
                                             const std::vector<crashsim::KvOp>& ops,
                                             const crashsim::Options& o = {});

struct MixedBatch {
  std::vector<crashsim::KvOp> setup;  //!< the first `setup_n` keys inserted (value: index)
  std::vector<crashsim::KvOp> ops;    //!< random keys: 1/4 insert, 1/4 upsert, 1/2 remove
};
//! Long keys (200..1100 bytes; make_keys(Gen::long_keys, 12, 13)), for the B+-trees' key
//! blocks: the first `setup_n` inserted by the setup; the ops insert the next four, remove
//! the second key and upsert the eighth.
MixedBatch long_key_batch(std::size_t setup_n);
//! A deterministic batch (rng seed 5) over `keys`.
MixedBatch sampled_mix(const std::vector<std::string>& keys, std::size_t setup_n,
                       std::size_t ops_n);

//! The factory of index type T created with `io`; `tweak(T&)` runs on each new tree (a test
//! fault that makes a broken variant: a build with WORT_FAULTS).
template <class T, class Tweak>
crashsim::Factory factory_with(const IndexOptions& io, Tweak tweak) {
  return crashsim::Factory{std::string(T::kKind),
                           [io, tweak](Pool& p) {
                             auto t = T::create(p, io);
                             if (t) tweak(**t);
                             return adapt<T>(std::move(t));
                           },
                           [](Pool& p) { return adapt<T>(T::open(p)); }};
}
//! The factory of index type T created with `io`.
template <class T>
crashsim::Factory factory_with(const IndexOptions& io) {
  return factory_with<T>(io, [](T&) {});
}
//! The factory of index type T created with its first option word `w0` (the rest default).
template <class T>
crashsim::Factory factory_with_word0(std::uint64_t w0) {
  IndexOptions io;
  io.words[0] = w0;
  return factory_with<T>(io);
}

//! Options for a run whose operations reach many crash points: every crash image while
//! there are at most 16 at a point, else 4 sampled ones.
inline crashsim::Options capped_options() {
  crashsim::Options o;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  return o;
}

//! One index type on small nodes, for its crash tests: the IndexOptions whose first words
//! are `words` (words[0], words[1], ...; the rest default), the factory of such trees,
//! the factory with a test fault switched on (a broken variant), and run_and_print on it.
template <class T>
struct SmallNodes {
  IndexOptions options;
  explicit SmallNodes(std::initializer_list<std::uint64_t> words) {
    std::size_t i = 0;
    for (std::uint64_t w : words) options.words[i++] = w;
  }
  crashsim::Factory factory() const { return factory_with<T>(options); }
  template <class Tweak>
  crashsim::Factory broken(Tweak tweak) const {
    return factory_with<T>(options, tweak);
  }
  //! Expects the simulator to find the broken variant that `tweak` makes, on setup + ops.
  template <class Tweak>
  void expect_caught(Tweak tweak, const std::vector<crashsim::KvOp>& setup,
                     const std::vector<crashsim::KvOp>& ops) const {
    const crashsim::Report r = run_and_print(broken(tweak), setup, ops, {});
    EXPECT_FALSE(r.correct()) << r.summary();
  }
  crashsim::Report run(const std::vector<crashsim::KvOp>& setup,
                       const std::vector<crashsim::KvOp>& ops, crashsim::Options o = {}) const {
    return run_and_print(factory(), setup, ops, o);
  }
};

//! A split and a merge of the ART-style trees' nodes that a crash can interrupt: the setup
//! (two keys that share a 7-byte prefix) and the operations (a prefix split above them, an
//! insert below, an upsert, removes that merge back, an insert that splits again).
std::vector<crashsim::KvOp> split_and_merge_setup();
std::vector<crashsim::KvOp> split_and_merge_ops();

//! Inserts of the keys u64_str(from + i * step), i < n, each with its number as value.
std::vector<crashsim::KvOp> inserts(std::uint64_t from, std::uint64_t n, std::uint64_t step = 1);

//! An index's sampled crash runs: for random_u64, shared_prefix and prefix_chains keys,
//! `keys` of them (seed 11), the first `setup_n` inserted, then `ops_n` mixed operations
//! traced with the drain oracle (seed 3, a 4 MiB pool, 16 images of a point exhaustive and 4
//! random, fewer in a sanitizer build): every run correct and clean.
void expect_clean_sampled_mixes(const crashsim::Factory& tree, std::size_t keys,
                                std::size_t setup_n, std::size_t ops_n);

//! The checks of a run with crashsim::Options::trace_create (a crash point at every fence of
//! Index::create, and the COMMIT_COUNT table's create row): correct, creation traced, and no
//! finding but the pool header's once-per-pool REDUNDANT_FLUSH (src/pm/pool.cc; see
//! tests/pm/pool_crash_test.cc).
inline void expect_clean_creation(const crashsim::Report& r) {
  EXPECT_TRUE(r.correct()) << r.summary();
  for (const auto& f : r.findings)
    EXPECT_TRUE(f.kind == "REDUNDANT_FLUSH" && f.detail.find("60 of 64") != std::string::npos &&
                f.detail.find("creation") != std::string::npos)
        << r.summary();
  EXPECT_GT(r.crash_points, 4u) << "creation was not traced";
  EXPECT_GT(r.images, 0u);
}

}  // namespace wort::test

#define EXPECT_CLEAN(report)                                    \
  do {                                                          \
    const auto& r_ = (report);                                  \
    EXPECT_TRUE(r_.correct()) << r_.summary();                  \
    EXPECT_TRUE(r_.clean()) << r_.summary();                    \
    EXPECT_GT(r_.images, 0u) << "no crash state was explored";  \
  } while (0)

namespace wort::test {
//! EXPECT_CLEAN on each report of run_above_4gib.
inline void expect_clean_above_4gib(const crashsim::Factory& tree,
                                    const std::vector<crashsim::KvOp>& setup,
                                    const std::vector<crashsim::KvOp>& ops,
                                    const crashsim::Options& o = {}) {
  for (const crashsim::Report& r : run_above_4gib(tree, setup, ops, o)) EXPECT_CLEAN(r);
}
}  // namespace wort::test
