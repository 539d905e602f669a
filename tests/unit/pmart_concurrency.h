// tests/unit/pmart_concurrency.h — the concurrency tests of the ART engine shared by WOART and
// ART+CoW (src/index/artcommon, README "Concurrency"), written once as a typed test and
// instantiated by woart_concurrency_test.cc and artcow_concurrency_test.cc (each links only
// its index). Lock-free readers run lookups and scans while writers (each locking only the
// nodes it changes) insert disjoint and overlapping keys, remove, upsert and update, so
// that nodes grow 4→16→48→256, shrink back, split their compressed paths, merge away, and
// leaves split under the readers. Every value is a function of its key, so a reader can
// check whatever it sees (single-key linearizability is the conformance suite's:
// tests/conformance/linearizability_concurrency_test.cc); afterwards the tree is compared
// with the reference, verified, and the allocator audited (nothing leaked or freed twice
// once the epochs drain).
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

#include "index/artcommon/sync.h"
#include "support/keygen.h"
#include "unit/conc_fixture.h"
#include "wort/index.h"

namespace wort::test {

//! Key j: pairs (2i, 2i+1) are base(i) and base(i) + "+" (a key that is a proper prefix of
//! another: end-of-key slots); base(i) alternates a scattered 8-byte key (wide nodes near
//! the root) and a clustered one (long compressed paths, prefix splits, NODE4/16 below).
inline std::string conc_key(unsigned j) {
  const std::uint64_t i = j / 2;
  std::uint64_t x;
  if (i % 2 == 0) x = (i * 0x9E3779B97F4A7C15ull) & 0xff0f000000ff00ffull;
  else x = (i % 48) << 56 | (i / 48) << 4 | 0x3;
  std::string k = u64_str(x);
  if (j % 2 == 1) k += "+";
  return k;
}

//! What the first test expects of the node counts once its inserts are done (the ART
//! engine's trees: nodes grew to NODE48/NODE256, and NODE4s remain). A tree with other node
//! kinds (WORT's one 16-way node) specialises it in its instantiating file.
template <class Tree>
struct ConcNodeGrowth {
  static void expect(const IndexStats& st) {
    EXPECT_GE(st.nodes.count("node48") + st.nodes.count("node256"), 1u);
    EXPECT_GE(st.nodes.count("node4"), 1u);
  }
};

//! Per-key completion flags: set once a writer's insert of key j has returned ok.
struct Done {
  explicit Done(unsigned n) : v(n) {}
  std::vector<std::atomic<bool>> v;
};

//! A reader: lookups (a key whose insert completed before the lookup began must be found;
//! a key loaded before the writers started must be found unless `removable`; any value
//! found must be the key's), and scans whose keys must ascend with the keys' values.
template <class Tree>
void conc_reader(Tree& t, const std::atomic<bool>& stop, unsigned preloaded, unsigned universe,
                 bool removable, const Done* done, unsigned seed,
                 std::atomic<std::uint64_t>& errors, std::atomic<std::uint64_t>& ops) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::uint64_t n = 0;
  while (!stop.load(std::memory_order_relaxed) || n < 200) {
    ++n;
    const unsigned i = static_cast<unsigned>(next() % universe);
    const std::string k = conc_key(i);
    const bool inserted_before = done != nullptr && done->v[i].load(std::memory_order_acquire);
    const auto got = t.lookup(as_key(k));
    if (!got && ((i < preloaded && !removable) || inserted_before)) {
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: key " << i << " inserted before the lookup began not found";
    }
    if (got && *got != conc_value_of(k)) {
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: key " << i << " has a foreign value";
    }
    if (n % 16 == 0) {
      std::string prev;
      bool first = true;
      const std::size_t max = n % 64 == 0 ? 2000 : 100;
      t.scan(as_key(k), max, [&](Key kk, Value v) {
        std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
        if ((!first && s <= prev) || s < k || v != conc_value_of(s)) {
          errors.fetch_add(1);
          ADD_FAILURE() << "reader: scan out of order, below its bound, or foreign value";
        }
        prev = std::move(s);
        first = false;
        return true;
      });
    }
    if (n % 61 == 0) {  // a bounded range
      const std::string hi = conc_key(static_cast<unsigned>(next() % universe));
      std::string prev;
      t.range(as_key(k), as_key(hi), [&](Key kk, Value v) {
        std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
        if (s < k || s >= hi || (!prev.empty() && s <= prev) || v != conc_value_of(s)) {
          errors.fetch_add(1);
          ADD_FAILURE() << "reader: range outside its bounds, out of order or foreign value"
                        << " lo=" << testing::PrintToString(k) << " hi=" << testing::PrintToString(hi)
                        << " s=" << testing::PrintToString(s) << " prev=" << testing::PrintToString(prev)
                        << " v=" << v << " want=" << conc_value_of(s);
        }
        prev = std::move(s);
        return true;
      });
    }
  }
  ops.fetch_add(n);
}

template <class Tree>
class PmartConcurrency : public ::testing::Test {};
TYPED_TEST_SUITE_P(PmartConcurrency);

// Writers insert disjoint and overlapping keys (walked in the same order, so they meet in
// the same nodes) while readers look up and scan; the root and the nodes below grow.
TYPED_TEST_P(PmartConcurrency, InsertsDisjointAndOverlappingWhileReadersScan) {
  ConcFixture<TypeParam> f;
  constexpr unsigned kWriters = 3, kReaders = 2;
  const unsigned preloaded = 1000 * kConcScale, fresh = 4000 * kConcScale;
  const unsigned universe = preloaded + fresh;
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < preloaded; ++i) {
    const std::string k = conc_key(i);
    ASSERT_EQ(f.tree->insert(as_key(k), conc_value_of(k)), Status::ok);
    ref.emplace(k, conc_value_of(k));
  }
  Done done(universe);
  std::atomic<bool> stop{false};
  std::atomic<unsigned> ready{0};
  std::atomic<std::uint64_t> errors{0}, reads{0}, shared_ok{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < kReaders; ++r)
    th.emplace_back(conc_reader<TypeParam>, std::ref(*f.tree), std::cref(stop), preloaded,
                    universe, false, &done, r + 1, std::ref(errors), std::ref(reads));
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < kWriters) std::this_thread::yield();
      // key j belongs to writer j % 4 if that is < 3, else to all of them (exactly one
      // insert may succeed)
      for (unsigned j = 0; j < fresh; ++j) {
        const unsigned owner = j % (kWriters + 1);
        if (owner != w && owner != kWriters) continue;
        const std::string k = conc_key(preloaded + j);
        const Status s = f.tree->insert(as_key(k), conc_value_of(k));
        if (s == Status::ok) done.v[preloaded + j].store(true, std::memory_order_release);
        if (owner == w && s != Status::ok) errors.fetch_add(1);
        if (owner == kWriters) {
          if (s == Status::ok) shared_ok.fetch_add(1);
          else if (s != Status::exists) errors.fetch_add(1);
        }
      }
    });
  for (auto& w : writers) w.join();
  stop = true;
  for (auto& t : th) t.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(shared_ok.load(), fresh / (kWriters + 1));  // one success per shared key
  for (unsigned j = 0; j < fresh; ++j)
    ref.emplace(conc_key(preloaded + j), conc_value_of(conc_key(preloaded + j)));
  ConcNodeGrowth<TypeParam>::expect(f.tree->stats());
  f.check(ref);
  std::printf("[%s concurrency] %llu reader ops\n", std::string(TypeParam::kKind).c_str(),
              static_cast<unsigned long long>(reads.load()));
}

// Writers remove half the loaded keys (nodes shrink 256→48→16→4 and merge away), upsert and
// update the others and insert new ones, while readers look up and scan.
TYPED_TEST_P(PmartConcurrency, RemovesInsertsAndUpsertsWhileReadersScan) {
  ConcFixture<TypeParam> f;
  const unsigned n = 2500 * kConcScale;
  constexpr unsigned kWriters = 3;
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(f.tree->insert(as_key(conc_key(i)), conc_value_of(conc_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < 2; ++r)
    th.emplace_back(conc_reader<TypeParam>, std::ref(*f.tree), std::cref(stop), n, 2 * n, true,
                    nullptr, 7u + r, std::ref(errors), std::ref(reads));
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (unsigned i = w; i < 2 * n; i += kWriters) {
        const std::string k = conc_key(i);
        Status s;
        if (i >= n) s = f.tree->insert(as_key(k), conc_value_of(k));
        else if (i % 4 != 3) s = f.tree->remove(as_key(k));
        else if (i % 8 == 3) s = f.tree->upsert(as_key(k), conc_value_of(k));
        else s = f.tree->update(as_key(k), conc_value_of(k));
        if (s != Status::ok) {
          errors.fetch_add(1);
          ADD_FAILURE() << "writer: op on key " << i << " gave status " << static_cast<int>(s);
        }
      }
    });
  for (auto& w : writers) w.join();
  stop = true;
  for (auto& t : th) t.join();
  EXPECT_EQ(errors.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < 2 * n; ++i)
    if (i >= n || i % 4 == 3) ref.emplace(conc_key(i), conc_value_of(conc_key(i)));
  f.check(ref);
}

// Keys churned around readers: every key of a small set is removed and inserted again over
// and over (WOART reuses the freed NODE4/NODE16/NODE48 slot: the stamp check), while
// readers must never see a foreign value and keys never touched must stay found.
TYPED_TEST_P(PmartConcurrency, ChurnOfRemovedAndReinsertedKeys) {
  ConcFixture<TypeParam> f;
  const unsigned stable = 600, churn = 200, rounds = 20 * kConcScale;
  for (unsigned i = 0; i < stable + churn; ++i)
    ASSERT_EQ(f.tree->insert(as_key(conc_key(i)), conc_value_of(conc_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::thread rd([&] {
    std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed) || n < 200) {
      ++n;
      const unsigned i = static_cast<unsigned>((n * 2654435761u) % (stable + churn));
      const std::string k = conc_key(i);
      const auto got = f.tree->lookup(as_key(k));
      if ((i < stable && !got) || (got && *got != conc_value_of(k))) {
        errors.fetch_add(1);
        ADD_FAILURE() << "reader: key " << i << (got ? " foreign value" : " missing");
      }
      if (n % 8 == 0) {
        std::string prev;
        f.tree->scan(as_key(k), 50, [&](Key kk, Value v) {
          std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
          if ((!prev.empty() && s <= prev) || v != conc_value_of(s)) {
            errors.fetch_add(1);
            ADD_FAILURE() << "scan from key " << i << ": "
                          << (v != conc_value_of(s) ? "foreign value" : "out of order");
          }
          prev = std::move(s);
          return true;
        });
      }
    }
    reads.fetch_add(n);
  });
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (unsigned r = 0; r < rounds; ++r)
        for (unsigned i = stable + w; i < stable + churn; i += 2) {
          const std::string k = conc_key(i);
          if (const Status s = f.tree->remove(as_key(k)); s != Status::ok) {
            errors.fetch_add(1);
            ADD_FAILURE() << "writer " << w << ": remove of key " << i << ": " << to_string(s);
          }
          if (const Status s = f.tree->insert(as_key(k), conc_value_of(k)); s != Status::ok) {
            errors.fetch_add(1);
            ADD_FAILURE() << "writer " << w << ": insert of key " << i << ": " << to_string(s);
          }
        }
    });
  for (auto& w : writers) w.join();
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < stable + churn; ++i) ref.emplace(conc_key(i), conc_value_of(conc_key(i)));
  f.check(ref);
}

// A scan's visitor calls back into the tree (a lookup of the key it was given, and now and
// then an update of it) while writers remove and re-insert keys, retiring nodes: the inner
// lookup's pin must not end the scan's (epoch.h: Pin and NestablePin hold different words),
// or the nodes the scan still walks could be freed and reused under it.
TYPED_TEST_P(PmartConcurrency, ScanVisitorsCallBackIntoTheTree) {
  ConcFixture<TypeParam> f;
  const unsigned stable = 1500, churn = 600, rounds = 6 * kConcScale;
  for (unsigned i = 0; i < stable + churn; ++i)
    ASSERT_EQ(f.tree->insert(as_key(conc_key(i)), conc_value_of(conc_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, visited{0};
  std::thread rd([&] {
    std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed) || n < 20) {
      ++n;
      std::string prev;
      f.tree->scan(as_key(conc_key(static_cast<unsigned>(n * 7919 % (stable + churn)))), 400,
                   [&](Key kk, Value v) {
                     std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
                     const auto again = f.tree->lookup(kk);
                     if ((!prev.empty() && s <= prev) || v != conc_value_of(s) ||
                         (again && *again != conc_value_of(s)))
                       errors.fetch_add(1);
                     if (visited.fetch_add(1) % 97 == 0) {  // a write from inside the scan
                       const Status u = f.tree->update(kk, conc_value_of(s));
                       if (u != Status::ok && u != Status::not_found) errors.fetch_add(1);
                     }
                     prev = std::move(s);
                     return true;
                   });
    }
  });
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (unsigned r = 0; r < rounds; ++r)
        for (unsigned i = stable + w; i < stable + churn; i += 2) {
          const std::string k = conc_key(i);
          if (f.tree->remove(as_key(k)) != Status::ok) errors.fetch_add(1);
          if (f.tree->insert(as_key(k), conc_value_of(k)) != Status::ok) errors.fetch_add(1);
        }
    });
  for (auto& w : writers) w.join();
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(visited.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < stable + churn; ++i) ref.emplace(conc_key(i), conc_value_of(conc_key(i)));
  f.check(ref);
}

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
    for (const bool broken : {false, true}) {
      SCOPED_TRACE(testing::Message() << "fanout " << fanout << (broken ? ", broken walk" : ""));
      ConcFixture<TypeParam> f;
      auto key = [](char b, char tail) { return std::string{b, tail}; };
      std::map<std::string, Value> ref = insert_letter_keys(f, fanout, "B1");
      artcommon::g_broken_walk_trusts_snapshot = broken;
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
      artcommon::g_broken_walk_trusts_snapshot = false;
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

// The same reuse, between the walk's load of B's child pointer and its re-check of B's
// commit word: at the scan's first key "A1" the visitor removes "B1" and inserts "@1" (and,
// in a second round, "@2": a node) into B's slot; the walk then reads that slot's pointer
// ('@'), and a hook run right after the load (artcommon::g_walk_hook) removes the '@' keys
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
        artcommon::g_walk_ctx = &aba;
        artcommon::g_walk_hook = &WalkAba::run;
        artcommon::g_broken_walk_skips_pointer_reread = broken;
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
        artcommon::g_walk_hook = nullptr;
        artcommon::g_broken_walk_skips_pointer_reread = false;
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

REGISTER_TYPED_TEST_SUITE_P(PmartConcurrency, InsertsDisjointAndOverlappingWhileReadersScan,
                            RemovesInsertsAndUpsertsWhileReadersScan,
                            ChurnOfRemovedAndReinsertedKeys,
                            ScanVisitorsCallBackIntoTheTree, AScanSkipsAnEntryReusedUnderIt,
                            AScanSkipsAnEntryReusedBetweenItsLoads);

}  // namespace wort::test
