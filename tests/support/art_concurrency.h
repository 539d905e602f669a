// tests/support/art_concurrency.h — the ART engine's own concurrency tests, written once as a
// typed test and instantiated by woart_, artcow_, wort_ and roart_engine_concurrency_test.cc
// (each links only its index): a scan whose walk meets an entry removed and its slot reused
// under it (without threads, from the scan's visitor, and between two of its loads). The
// scenarios every concurrent kind shares (readers during writers, single-key
// linearizability) are the conformance suite's (tests/conformance/).
//
// Built normally this checks the protocol's outcome; built with WORT_TSAN=ON it is the
// data-race check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "index/art_engine/sync.h"
#include "support/faults.h"
#include "support/keygen.h"
#include "support/conc_fixture.h"
#include "wort/index.h"

namespace wort::test {

inline std::string conc_key(unsigned j) { return paired_key(j); }  // support/keygen.h

template <class Tree>
class PmartConcurrency : public ::testing::Test {};
TYPED_TEST_SUITE_P(PmartConcurrency);

//! The keys "A1", "B1", ... (fanout of them: the root a NODE4, NODE16 or NODE48), inserted;
//! the reference holds each but `except`.
template <class Tree>
std::map<std::string, Value> insert_letter_keys(ConcFixture<Tree>& f, unsigned fanout,
                                                const std::string& except) {
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < fanout; ++i) {
    const std::string k{static_cast<char>('A' + i), '1'};
    EXPECT_EQ(f.tree->insert(as_key(k), conc_value_of(k)), Status::ok);
    if (k != except) ref.emplace(k, conc_value_of(k));
  }
  return ref;
}

//! What a scan that ran under changes reported: strictly ascending, and every key of `ref`
//! but `may_miss` (changed during the scan) exactly once.
struct ScanOrder {
  bool ascending = false;
  bool all_there = true;
};
inline ScanOrder scan_order(const std::vector<std::string>& seen,
                            const std::map<std::string, Value>& ref, const std::string& may_miss) {
  ScanOrder o;
  o.ascending = std::is_sorted(seen.begin(), seen.end()) &&
                std::adjacent_find(seen.begin(), seen.end()) == seen.end();
  for (const auto& [k, v] : ref)
    if (k != may_miss) o.all_there &= std::count(seen.begin(), seen.end(), k) == 1;
  return o;
}

// A scan's walk of a node reads the node's entries once, then each child pointer when it gets
// there, after the subtrees before it: by then the entry may have been removed and its slot
// reused by another key byte, whose leaf may have split into a node (WOART's NODE4 and
// NODE16; NODE48 re-reads its index byte just before the pointer). Made to happen without
// threads: the visitor, at the scan's first key "A1", removes the next entry's key "B1" and
// inserts "@1" and "@2" (the add reuses B's slot, the second insert splits its leaf into a
// node there). The scan must stay ascending and report every key that was there throughout;
// the broken walk that trusts its snapshot reports "@1", "@2" in B's place. (WORT and ROART,
// whose nodes reuse no slot this way, must give the same outcome.)
TYPED_TEST_P(PmartConcurrency, AScanSkipsAnEntryReusedUnderIt) {
  const bool in_place = std::string(TypeParam::kKind) == "woart";  // ART+CoW copies NODE4/16
  for (const unsigned fanout : {3u, 8u, 48u}) {  // the root a NODE4, a NODE16, a NODE48
    for (const bool broken : kVariants) {
      SCOPED_TRACE(testing::Message() << "fanout " << fanout << (broken ? ", broken walk" : ""));
      ConcFixture<TypeParam> f;
      auto key = [](char b, char tail) { return std::string{b, tail}; };
      std::map<std::string, Value> ref = insert_letter_keys(f, fanout, "B1");
      WORT_SET_FAULT(art_engine::g_broken_walk_trusts_snapshot, broken);
      std::vector<std::string> seen;
      f.tree->scan(Key{}, 1000, [&](Key kk, Value) {
        seen.emplace_back(reinterpret_cast<const char*>(kk.data()), kk.size());
        if (seen.size() == 1) {
          EXPECT_EQ(f.tree->remove(as_key(key('B', '1'))), Status::ok);
          for (const char t : {'1', '2'})
            EXPECT_EQ(f.tree->insert(as_key(key('@', t)), conc_value_of(key('@', t))), Status::ok);
        }
        return true;
      });
      WORT_SET_FAULT(art_engine::g_broken_walk_trusts_snapshot, false);
      const auto [ascending, all_there] = scan_order(seen, ref, "B1");  // "B1": seen or not
      if (broken && in_place && fanout < 48) {
        EXPECT_FALSE(ascending) << "the broken walk was not caught";
        continue;
      }
      EXPECT_TRUE(ascending && all_there) << testing::PrintToString(seen);
      for (const char t : {'1', '2'}) ref.emplace(key('@', t), conc_value_of(key('@', t)));
      f.check(ref);
    }
  }
}

#if WORT_FAULTS  // its hook (art_engine::g_walk_hook) stages the reuse
// The same reuse, between the walk's load of B's child pointer and its re-check of B's
// commit word: at the scan's first key "A1" the visitor removes "B1" and inserts "@1" (and,
// in a second round, "@2": a node) into B's slot; the walk then reads that slot's pointer
// ('@'), and a hook run right after the load (art_engine::g_walk_hook) removes the '@' keys
// and inserts "B1" again, into the same slot. The commit word names B once more (an A-B-A),
// so only the walk's second read of the pointer shows that what it read was '@'s. The scan
// must stay ascending and report every key that was there throughout; the broken walk that
// skips the second read reports '@' keys in B's place. (Where a node type copies instead of
// reusing a slot — ART+CoW's NODE4/16 — nothing is fooled and both walks are right. NODE48
// reads B's index byte just before the pointer, so its walk already finds B's entry gone at
// the visitor's change and reads no '@' pointer: fooling it takes an A-B-A between each of
// its three loads, which this hook cannot stage; both walks must be right there too.)
struct WalkAba {
  std::function<void()> fn;
  bool armed = false;
  static void run(void* ctx) {
    auto* self = static_cast<WalkAba*>(ctx);
    if (!self->armed) return;
    self->armed = false;
    self->fn();
  }
};

TYPED_TEST_P(PmartConcurrency, AScanSkipsAnEntryReusedBetweenItsLoads) {
  const bool in_place = std::string(TypeParam::kKind) == "woart";
  for (const unsigned fanout : {3u, 8u, 48u}) {  // the root a NODE4, a NODE16, a NODE48
    for (const char last : {'1', '2'}) {  // B's slot holds a leaf "@1", or a node "@1"+"@2"
      for (const bool broken : {false, true}) {
        SCOPED_TRACE(testing::Message() << "fanout " << fanout << ", up to @" << last
                                        << (broken ? ", broken walk" : ""));
        ConcFixture<TypeParam> f;
        auto key = [](char b, char tail) { return std::string{b, tail}; };
        const std::map<std::string, Value> ref = insert_letter_keys(f, fanout, "");
        WalkAba aba;
        aba.fn = [&] {
          for (char t = '1'; t <= last; ++t) EXPECT_EQ(f.tree->remove(as_key(key('@', t))), Status::ok);
          EXPECT_EQ(f.tree->insert(as_key(key('B', '1')), conc_value_of(key('B', '1'))), Status::ok);
        };
        art_engine::g_walk_ctx = &aba;
        art_engine::g_walk_hook = &WalkAba::run;
        art_engine::g_broken_walk_skips_pointer_reread = broken;
        std::vector<std::string> seen;
        f.tree->scan(Key{}, 1000, [&](Key kk, Value) {
          seen.emplace_back(reinterpret_cast<const char*>(kk.data()), kk.size());
          if (seen.size() == 1) {
            EXPECT_EQ(f.tree->remove(as_key(key('B', '1'))), Status::ok);
            for (char t = '1'; t <= last; ++t)
              EXPECT_EQ(f.tree->insert(as_key(key('@', t)), conc_value_of(key('@', t))), Status::ok);
            aba.armed = true;  // the walk's next pointer load is B's slot's
          }
          return true;
        });
        art_engine::g_walk_hook = nullptr;
        art_engine::g_broken_walk_skips_pointer_reread = false;
        const bool fired = !aba.armed;
        if (!fired) WalkAba::run(&aba);  // the same end state: '@' keys gone, "B1" back
        const auto [ascending, all_there] = scan_order(seen, ref, "B1");  // "B1": seen or not
        if (in_place && fanout < 48) {
          EXPECT_TRUE(fired) << "the walk read no reused slot's pointer after the visitor";
          if (broken) {
            EXPECT_FALSE(ascending) << "the broken walk was not caught";
            continue;
          }
        }
        EXPECT_TRUE(ascending && all_there) << testing::PrintToString(seen);
        f.check(ref);
      }
    }
  }
}
#endif  // WORT_FAULTS

#if WORT_FAULTS
REGISTER_TYPED_TEST_SUITE_P(PmartConcurrency, AScanSkipsAnEntryReusedUnderIt,
                            AScanSkipsAnEntryReusedBetweenItsLoads);
#else
REGISTER_TYPED_TEST_SUITE_P(PmartConcurrency, AScanSkipsAnEntryReusedUnderIt);
#endif

}  // namespace wort::test
