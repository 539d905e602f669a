// tests/pm/pool_crash_test.cc — crash tests of creating a pool and an index in it
// (crashsim::Options::trace_create): Pool::create_in_memory's header writes and the index's
// create (its root block, Pool::set_root = pm::publish) run traced, with a crash point at
// every fence and at create's return. Before create returns an image may hold no pool or no
// index; from its return on it must open as an empty index. The first insert follows.
//
// Proof that it can fail: toy_hash_unpersisted_root (create publishes the root before its
// block is written back) is caught; `make mutate` drops Pool::set_root's persist.
#include <gtest/gtest.h>

#include <vector>

#include "crashsim/harness.h"
#include "index/art_engine/art_tree.h"
#include "index/artcow/artcow.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "support/crash_ops.h"
#include "support/toy_hash.h"

namespace wort::test {
namespace {

crashsim::Options create_options() {
  crashsim::Options o;
  o.trace_create = true;
  o.seed = 9;
  return o;
}

// Pool creation writes its header fields (4 lines) and then persists the whole 4 KiB header:
// 60 lines written back with nothing in them, one REDUNDANT_FLUSH finding in
// write_new_header (src/pm/pool.cc), a performance finding of a once-per-pool path
// (reported to the lead, not changed here). Every other finding fails the test.
bool only_the_header_flush(const crashsim::Report& r) {
  for (const auto& f : r.findings)
    if (f.kind != "REDUNDANT_FLUSH" || f.detail.find("60 of 64") == std::string::npos ||
        f.detail.find("creation") == std::string::npos)
      return false;
  return true;
}

template <class T>
void expect_clean_create() {
  const auto r = run_and_print(crashsim::factory_of<T>(), {},
                               {ins("first", 1), ins("second", 2)}, create_options());
  EXPECT_TRUE(r.correct()) << r.summary();
  EXPECT_TRUE(only_the_header_flush(r)) << r.summary();
  EXPECT_GT(r.crash_points, 6u) << "creation was not traced";
  EXPECT_GT(r.images, 0u);
}

TEST(PoolCrash, CreateToyHash) { expect_clean_create<ToyHashCorrect>(); }
TEST(PoolCrash, CreateWort) { expect_clean_create<WortTree>(); }
TEST(PoolCrash, CreateWoart) { expect_clean_create<woart::Woart>(); }
TEST(PoolCrash, CreateArtcow) { expect_clean_create<artcow::ArtCow>(); }

// The create commit's data not written back: an acknowledged create leaves a pool whose
// root names a block with no valid root in it.
TEST(PoolCrash, UnpersistedRootIsCaught) {
  const auto r = run_and_print(crashsim::factory_of<ToyHash<ToyBug::unpersisted_root>>(), {},
                               {ins("first", 1)}, create_options());
  EXPECT_FALSE(r.correct()) << r.summary();
  EXPECT_TRUE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_TRUE(r.has("RECOVERY_FAILED")) << r.summary();
}

// Without trace_create the same bug is invisible: creation happens before tracing starts.
TEST(PoolCrash, UnpersistedRootIsInvisibleWithoutTracingCreate) {
  crashsim::Options o = create_options();
  o.trace_create = false;
  const auto r = run_and_print(crashsim::factory_of<ToyHash<ToyBug::unpersisted_root>>(), {},
                               {ins("first", 1)}, o);
  EXPECT_FALSE(r.has("RECOVERY_FAILED")) << r.summary();
}

}  // namespace
}  // namespace wort::test
