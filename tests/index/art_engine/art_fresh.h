// The ART engine's fresh leaves (src/index/art_engine/README.md, "No dirty reads"), for one
// flavor (woart_fresh_test.cc, artcow_fresh_test.cc): an insert commits with a cached store
// and its new leaf carries the session's mark until the commit's fence has passed. A reader
// that meets a marked leaf of its key writes back the leaf's commit word and the pointer
// word above it and fences before it returns the value (helping); a mark of an earlier
// session is cleared without either; a miss on a marked leaf (another key) helps nothing.
// The marks are set here by hand on a quiescent tree (the window in which a real insert
// leaves one is a few instructions long: the crash simulator's dirty-read oracle covers it,
// dirty_read_test). Broken variant: art_engine::g_broken_reader_ignores_fresh.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "index/art_engine/leaf.h"
#include "pm/persist.h"
#include "support/diff_harness.h"
#include "support/faults.h"
#include "support/keygen.h"

namespace wort::test::art_fresh {

using art_engine::fresh_mark;
using art_engine::Leaf;

inline constexpr std::uint64_t kKeys[] = {0xabcdef0123456700ull, 0xabcdef0123456711ull,
                                          0xabcdef0123456722ull, 0x1000ull};
inline const std::string kShort = "abc";
inline const std::string kLong = "a key of twenty bytes";

template <class Tree>
class Fresh {
 public:
  Fresh() : d_(crashsim::factory_of<Tree>(), 8ull << 20) {
    for (std::uint64_t k : kKeys) d_.insert(u64_str(k), k);
    d_.insert(kShort, 3);
    d_.insert(kLong, 20);
  }
  Index& index() { return d_.index(); }
  Pool& pool() { return d_.pool(); }
  //! The leaf holding k (the scan hands the visitor the leaf's own key bytes).
  Leaf* leaf_of(Key k) {
    Leaf* l = nullptr;
    index().scan(k, 1, [&](Key got, Value) {
      if (compare_keys(got, k) == 0)
        l = const_cast<Leaf*>(reinterpret_cast<const Leaf*>(got.data() - offsetof(Leaf, key)));
      return false;
    });
    return l;
  }
  std::uint32_t current() { return fresh_mark(pool().generation()); }
  static std::uint64_t fences() { return pm::counters().fences; }
  static std::uint64_t flushes() { return pm::counters().flushes; }

 private:
  DiffChecker d_;
};

template <class Tree>
void no_mark_is_left_once_an_insert_returns() {
  Fresh<Tree> f;
  for (std::uint64_t k : kKeys) {
    const std::string s = u64_str(k);
    ASSERT_NE(f.leaf_of(as_key(s)), nullptr);
    EXPECT_EQ(f.leaf_of(as_key(s))->fresh, 0u);
  }
  EXPECT_EQ(f.leaf_of(as_key(kShort))->fresh, 0u);
  EXPECT_EQ(f.leaf_of(as_key(kLong))->fresh, 0u);
}

// Every reader entry point helps a leaf with this session's mark: one fence (after one or two
// write-backs) before the value, then the mark is gone.
template <class Tree>
void readers_help_a_marked_leaf_then_clear_it() {
  Fresh<Tree> f;
  Index& t = f.index();
  const std::string s8 = u64_str(kKeys[1]);
  const Key k8 = as_key(s8);
  struct Read {
    const char* what;
    Key key;
    std::function<void()> run;
  };
  const std::vector<Read> reads = {
      {"lookup 8", k8, [&] { EXPECT_EQ(t.lookup(k8), std::optional<Value>(kKeys[1])); }},
      {"lookup short", as_key(kShort),
       [&] { EXPECT_EQ(t.lookup(as_key(kShort)), std::optional<Value>(3)); }},
      {"lookup long", as_key(kLong),
       [&] { EXPECT_EQ(t.lookup(as_key(kLong)), std::optional<Value>(20)); }},
      {"scan", k8, [&] { EXPECT_EQ(t.scan(Key{}, 100, [](Key, Value) { return true; }), 6u); }},
      {"range", k8, [&] {
         EXPECT_EQ(t.range(Key{}, as_key("\xff"), [](Key, Value) { return true; }), 6u);
       }}};
  for (const Read& r : reads) {
    SCOPED_TRACE(r.what);
    Leaf* l = f.leaf_of(r.key);
    ASSERT_NE(l, nullptr);
    l->fresh = f.current();
    const std::uint64_t f0 = f.fences(), w0 = f.flushes();
    r.run();
    EXPECT_EQ(f.fences() - f0, 1u);
    EXPECT_GE(f.flushes() - w0, 1u);
    EXPECT_LE(f.flushes() - w0, 2u);  // the leaf's commit word and the pointer word above
    EXPECT_EQ(l->fresh, 0u);
  }
}

// A lookup of another key that lands on a marked leaf helps nothing (its answer does not
// depend on that insert); a lookup of a key of the same length compares the mark too and
// goes the cold way, which finds the key absent.
template <class Tree>
void a_miss_on_a_marked_leaf_does_not_help() {
  Fresh<Tree> f;
  Leaf* l = f.leaf_of(Key(u64_key(kKeys[3])));
  l->fresh = f.current();
  const std::uint64_t f0 = f.fences();
  EXPECT_FALSE(f.index().lookup(Key(u64_key(kKeys[3] + 1))).has_value());  // same slot
  EXPECT_EQ(f.fences() - f0, 0u);
  EXPECT_EQ(l->fresh, f.current());
}

// A mark of an earlier session (a crash, or a clean exit before the cleared line was
// evicted): the leaf is reachable after the restart, so durable — cleared, nothing written
// back, no fence.
template <class Tree>
void an_earlier_sessions_mark_is_cleared_without_help() {
  Fresh<Tree> f;
  Leaf* l = f.leaf_of(Key(u64_key(kKeys[2])));
  l->fresh = fresh_mark(f.pool().generation() - 1);
  const std::uint64_t f0 = f.fences(), w0 = f.flushes();
  EXPECT_EQ(f.index().lookup(Key(u64_key(kKeys[2]))), std::optional<Value>(kKeys[2]));
  EXPECT_EQ(f.fences() - f0, 0u);
  EXPECT_EQ(f.flushes() - w0, 0u);
  EXPECT_EQ(l->fresh, 0u);
}

#if WORT_FAULTS
// The broken variant: the reader returns the marked leaf's value with no fence, which the
// help test above would catch (and the dirty-read oracle does: dirty_read_test).
template <class Tree>
void broken_reader_does_not_help() {
  FaultSwitch broken(art_engine::g_broken_reader_ignores_fresh);
  Fresh<Tree> f;
  Leaf* l = f.leaf_of(Key(u64_key(kKeys[1])));
  l->fresh = f.current();
  const std::uint64_t f0 = f.fences();
  EXPECT_EQ(f.index().lookup(Key(u64_key(kKeys[1]))), std::optional<Value>(kKeys[1]));
  EXPECT_EQ(f.fences() - f0, 0u);
}
#endif  // WORT_FAULTS

}  // namespace wort::test::art_fresh

//! The fresh-leaf tests of one ART engine flavour `Tree`, as TESTs of the suite `Suite`
//! (inside namespace wort::test; the broken reader's only in a build with WORT_FAULTS).
#define WORT_ART_FRESH_TESTS(Suite, Tree)                                                  \
  TEST(Suite, NoMarkIsLeftOnceAnInsertReturns) { art_fresh::no_mark_is_left_once_an_insert_returns<Tree>(); } \
  TEST(Suite, ReadersHelpAMarkedLeafThenClearIt) { art_fresh::readers_help_a_marked_leaf_then_clear_it<Tree>(); } \
  TEST(Suite, AMissOnAMarkedLeafDoesNotHelp) { art_fresh::a_miss_on_a_marked_leaf_does_not_help<Tree>(); } \
  TEST(Suite, AnEarlierSessionsMarkIsClearedWithoutHelp) { art_fresh::an_earlier_sessions_mark_is_cleared_without_help<Tree>(); } \
  WORT_ART_FRESH_BROKEN_TEST(Suite, Tree)

#if WORT_FAULTS
#define WORT_ART_FRESH_BROKEN_TEST(Suite, Tree) \
  TEST(Suite, BrokenReaderDoesNotHelp) { art_fresh::broken_reader_does_not_help<Tree>(); }
#else
#define WORT_ART_FRESH_BROKEN_TEST(Suite, Tree)
#endif
