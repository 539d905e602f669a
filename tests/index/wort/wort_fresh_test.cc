// WORT's fresh leaves (README "No dirty reads"): an insert commits with a cached store, its
// new leaf carries the session's mark until the commit's fence has passed. A reader that
// meets a marked leaf of its key writes back the slots above it and fences before it
// returns the value (helping), a writer's `exists` waits for the lock of the leaf's owner,
// and a mark of an earlier session is cleared without either. The marks are set here by
// hand on a quiescent tree (the window in which a real insert leaves one is a few
// instructions long; the crash simulator's dirty-read oracle covers it, dirty_read_test).
// Broken variant: wort_index::g_broken_reader_ignores_fresh.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "index/kit/gen_lock.h"
#include "index/wort/wort_tree.h"
#include "pm/persist.h"
#include "support/faults.h"
#include "support/keygen.h"
#include "index/wort/wort_fixture.h"
#include "wort/persist.h"

namespace wort::test {
namespace {

using namespace wort_index;

class WortFresh : public test::WortTreeTest {
 protected:
  void SetUp() override {
    test::WortTreeTest::SetUp();
    if (HasFatalFailure()) return;
    // Keys of 8, 3 and 20 bytes (lookup_8, lookup_short, lookup_long), several in one node.
    for (std::uint64_t k : kKeys) ASSERT_EQ(tree_->insert(Key(u64_key(k)), k), Status::ok);
    ASSERT_EQ(tree_->insert(as_key(kShort), 3), Status::ok);
    ASSERT_EQ(tree_->insert(as_key(kLong), 20), Status::ok);
  }

  //! The leaf holding `k` (scan hands the visitor the leaf's own key bytes).
  LeafHeader* leaf_of(Key k) {
    LeafHeader* l = nullptr;
    tree_->scan(k, 1, [&](Key got, Value) {
      if (compare_keys(got, k) == 0)
        l = const_cast<LeafHeader*>(reinterpret_cast<const LeafHeader*>(got.data()) - 1);
      return false;
    });
    return l;
  }
  std::uint32_t current() const { return fresh_mark(pool_->generation()); }
  static std::uint64_t fences() { return pm::counters().fences; }
  static std::uint64_t flushes() { return pm::counters().flushes; }

  static constexpr std::uint64_t kKeys[] = {0xabcdef0123456700ull, 0xabcdef0123456711ull,
                                            0xabcdef0123456722ull, 0x1000ull};
  const std::string kShort = "abc";
  const std::string kLong = "a key of twenty bytes";
};

TEST_F(WortFresh, NoMarkIsLeftOnceAnInsertReturns) {
  for (std::uint64_t k : kKeys) EXPECT_EQ(leaf_of(Key(u64_key(k)))->fresh, 0u);
  EXPECT_EQ(leaf_of(as_key(kShort))->fresh, 0u);
  EXPECT_EQ(leaf_of(as_key(kLong))->fresh, 0u);
}

// Every reader entry point helps a leaf with this session's mark: one fence (and the slot
// write-backs) before the value, then the mark is gone.
TEST_F(WortFresh, ReadersHelpAMarkedLeafThenClearIt) {
  struct Read {
    const char* what;
    Key key;
    std::function<void()> run;
  };
  const std::string s8 = u64_str(kKeys[1]);
  const Key k8 = as_key(s8);
  const std::vector<Read> reads = {
      {"lookup_8", k8, [&] { EXPECT_EQ(tree_->lookup(k8), std::optional<Value>(kKeys[1])); }},
      {"lookup_short", as_key(kShort),
       [&] { EXPECT_EQ(tree_->lookup(as_key(kShort)), std::optional<Value>(3)); }},
      {"lookup_long", as_key(kLong),
       [&] { EXPECT_EQ(tree_->lookup(as_key(kLong)), std::optional<Value>(20)); }},
      {"scan", k8, [&] { EXPECT_EQ(tree_->scan(Key{}, 100, [](Key, Value) { return true; }), 6u); }},
      {"range", k8, [&] {
         EXPECT_EQ(tree_->range(Key{}, as_key("\xff"), [](Key, Value) { return true; }), 6u);
       }}};
  for (const Read& r : reads) {
    SCOPED_TRACE(r.what);
    LeafHeader* l = leaf_of(r.key);
    ASSERT_NE(l, nullptr);
    l->fresh = current();
    const std::uint64_t f0 = fences(), w0 = flushes();
    r.run();
    EXPECT_EQ(fences() - f0, 1u);
    EXPECT_GE(flushes() - w0, 1u);
    EXPECT_LE(flushes() - w0, 2u);  // the leaf's slot and the slot above it
    EXPECT_EQ(l->fresh, 0u);
  }
}

// A lookup of another key that lands on a marked leaf helps nothing (its answer does not
// depend on that insert).
TEST_F(WortFresh, AMissOnAMarkedLeafDoesNotHelp) {
  LeafHeader* l = leaf_of(Key(u64_key(kKeys[0])));
  l->fresh = current();
  const std::uint64_t f0 = fences();
  EXPECT_FALSE(tree_->lookup(Key(u64_key(kKeys[0] + 1))).has_value());  // same slot, other key
  EXPECT_EQ(fences() - f0, 0u);
  EXPECT_EQ(l->fresh, current());
}

// A mark of an earlier session (a crash, or a clean exit before the cleared line was
// evicted): the leaf is reachable after the restart, so durable — cleared, nothing written
// back, no fence.
TEST_F(WortFresh, AnEarlierSessionsMarkIsClearedWithoutHelp) {
  LeafHeader* l = leaf_of(Key(u64_key(kKeys[2])));
  l->fresh = fresh_mark(pool_->generation() - 1);
  const std::uint64_t f0 = fences(), w0 = flushes();
  EXPECT_EQ(tree_->lookup(Key(u64_key(kKeys[2]))), std::optional<Value>(kKeys[2]));
  EXPECT_EQ(fences() - f0, 0u);
  EXPECT_EQ(flushes() - w0, 0u);
  EXPECT_EQ(l->fresh, 0u);
}

#if WORT_FAULTS
// The broken variant: the reader returns the marked leaf's value with no fence, which the
// help test above would catch (and the dirty-read oracle does: dirty_read_test).
TEST_F(WortFresh, BrokenReaderDoesNotHelp) {
  FaultSwitch broken(g_broken_reader_ignores_fresh);
  LeafHeader* l = leaf_of(Key(u64_key(kKeys[1])));
  l->fresh = current();
  const std::uint64_t f0 = fences();
  EXPECT_EQ(tree_->lookup(Key(u64_key(kKeys[1]))), std::optional<Value>(kKeys[1]));
  EXPECT_EQ(fences() - f0, 0u);
}
#endif  // WORT_FAULTS

//! The node whose slot holds k's leaf (a descent by branch positions, quiescent tree).
Node* owner_of(Pool& pool, Key k) {
  Node* owner = nullptr;
  std::uint64_t w = pool.at<Anchor>(pool.root())->root;
  while (w != 0 && !is_leaf(w)) {
    owner = pool.at<Node>(w);
    w = *slot_for(owner, k, decode_header(owner->header).branch());
  }
  return owner;
}

//! Inserts `k` again on another thread while the test holds the lock of the node that owns
//! its leaf's slot; returns how long the insert took and its status.
std::pair<std::chrono::milliseconds, Status> insert_under_held_lock(WortTree& t, Pool& pool,
                                                                    std::uint64_t k) {
  const std::string key = u64_str(k);
  Node* root = owner_of(pool, as_key(key));
  EXPECT_NE(root, nullptr);
  const std::uint64_t gen = pool.generation();
  EXPECT_TRUE(kit::gen_lock(&root->lock, gen));
  std::atomic<bool> done{false};
  Status s = Status::ok;
  const auto t0 = std::chrono::steady_clock::now();
  std::chrono::milliseconds took{};
  std::thread w([&] {
    s = t.insert(Key(u64_key(k)), 1);
    took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    done = true;
  });
  // Held for 1 s, or until the insert returns (the broken variant: at once).
  for (int i = 0; i < 100 && !done.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool returned_early = done.load();
  kit::gen_unlock(&root->lock, gen);
  w.join();
  if (returned_early) took = std::chrono::milliseconds(0);
  return {took, s};
}

// A writer that finds its key in a leaf with this session's mark returns `exists` only once
// the inserting writer (here: the test, holding the owner's lock) has let go.
TEST_F(WortFresh, WriterExistsWaitsForTheInsertingWriter) {
  LeafHeader* l = leaf_of(Key(u64_key(kKeys[0])));
  l->fresh = current();
  const auto [took, s] = insert_under_held_lock(*tree_, *pool_, kKeys[0]);
  EXPECT_EQ(s, Status::exists);
  EXPECT_GE(took.count(), 900);
  EXPECT_EQ(l->fresh, 0u);
}

#if WORT_FAULTS
TEST_F(WortFresh, BrokenWriterReturnsExistsAtOnce) {
  FaultSwitch broken(g_broken_reader_ignores_fresh);
  leaf_of(Key(u64_key(kKeys[0])))->fresh = current();
  const auto [took, s] = insert_under_held_lock(*tree_, *pool_, kKeys[0]);
  EXPECT_EQ(s, Status::exists);
  EXPECT_EQ(took.count(), 0);  // returned while the lock was still held
}
#endif  // WORT_FAULTS

}  // namespace
}  // namespace wort::test
