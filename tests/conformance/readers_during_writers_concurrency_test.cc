// Readers during writers, for every concurrent kind (registry entry `concurrent`) on the
// shapes of its row in tests/conformance/kinds.h (kConc), through the type-erased handle
// (which takes no lock for a concurrent kind). Lock-free readers run lookups, scans and
// ranges while writers insert disjoint and overlapping keys, remove, upsert and update, so
// that nodes grow, split, shrink and merge under them (an ART's nodes 4->16->48->256 and
// back, its compressed paths split; a B+-tree's leaves split, unlink and its inner nodes
// collapse). Every value is a function of its key, so a reader can check whatever it sees;
// afterwards the index is compared with the reference, verified, and the allocator audited
// (nothing leaked or freed twice once the epochs drain). What is unique to one kind's
// protocol stays in its own tests (tests/index/<kind>/).
// Built with WORT_TSAN=ON (a *_concurrency_test.cc) this is also the data-race check.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conformance/kinds.h"
#include "index/artcow/artcow.h"
#include "index/fastfair/fastfair_tree.h"
#include "index/fptree/fptree_tree.h"
#include "index/roart/roart_tree.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/conc_fixture.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

//! Blocks retired and not yet freed, from the concrete class behind `ix` (each concurrent
//! kind keeps its own epochs); 0 for a kind not listed here.
template <class... T>
std::size_t retired_pending_of(const Index& ix) {
  std::size_t n = 0;
  ((n += dynamic_cast<const IndexAdapter<T>*>(&ix) != nullptr
             ? dynamic_cast<const IndexAdapter<T>&>(ix).impl().retired_pending()
             : 0),
   ...);
  return n;
}

//! An in-memory pool and the kind's index on one shape; check(): the whole index against a
//! reference (support/conc_fixture.h, conc_check).
struct Fixture {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> tree;
  //! The work multiplier: kConcScale times the kind's conc_work (1 under ThreadSanitizer).
  unsigned work;
  explicit Fixture(const KindShape& ks)
      : work(kConcScale == 1 ? 1 : kConcScale * traits_of(ks.kind).conc_work) {
    PoolOptions o;
    o.size = 256ull << 20;
    o.chunk_size = 1u << 20;
    o.kind = ks.kind;
    pool = std::move(Pool::create_in_memory(o)).value();
    tree = std::move(registry::find(ks.kind)->create(*pool, ks.options())).value();
  }
  void check(const std::map<std::string, Value>& ref) {
    conc_check(*tree, *pool, ref, [&] {
      return retired_pending_of<woart::Woart, artcow::ArtCow, WortTree, roart::Roart, FPTree,
                                FastFairTree>(*tree);
    });
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
void conc_reader(Index& t, const std::atomic<bool>& stop, unsigned preloaded, unsigned universe,
                 bool removable, const Done* done, unsigned seed,
                 std::atomic<std::uint64_t>& errors, std::atomic<std::uint64_t>& ops) {
  Xorshift next = reader_rng(seed);
  std::uint64_t n = 0;
  while (!stop.load(std::memory_order_relaxed) || n < 200) {
    ++n;
    const unsigned i = static_cast<unsigned>(next() % universe);
    const std::string k = paired_key(i);
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
    if (n % 16 == 0) checked_scan(t, k, n % 64 == 0 ? 2000 : 100, true, errors);
    if (n % 61 == 0)  // a bounded range
      checked_range(t, k, paired_key(static_cast<unsigned>(next() % universe)), errors);
  }
  ops.fetch_add(n);
}


//! Two writers remove and insert again the keys [stable, stable + churn) `rounds` times
//! (writer w the keys of its parity); every call must succeed (counted in `errors`).
void churn_with_two_writers(Index& t, unsigned stable, unsigned churn, unsigned rounds,
                            std::atomic<std::uint64_t>& errors) {
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (unsigned r = 0; r < rounds; ++r)
        for (unsigned i = stable + w; i < stable + churn; i += 2) {
          const std::string k = paired_key(i);
          if (const Status s = t.remove(as_key(k)); s != Status::ok) {
            errors.fetch_add(1);
            ADD_FAILURE() << "writer " << w << ": remove of key " << i << ": " << to_string(s);
          }
          if (const Status s = t.insert(as_key(k), conc_value_of(k)); s != Status::ok) {
            errors.fetch_add(1);
            ADD_FAILURE() << "writer " << w << ": insert of key " << i << ": " << to_string(s);
          }
        }
    });
  for (auto& w : writers) w.join();
}

class ReadersDuringWriters : public ::testing::TestWithParam<KindShape> {};

// Writers insert disjoint and overlapping keys (walked in the same order, so they meet in
// the same nodes) while readers look up and scan; the root and the nodes below grow.
TEST_P(ReadersDuringWriters, InsertsDisjointAndOverlappingWhileReadersScan) {
  Fixture f(GetParam());
  constexpr unsigned kWriters = 3, kReaders = 2;
  const unsigned preloaded = 1000 * f.work, fresh = 4000 * f.work;
  const unsigned universe = preloaded + fresh;
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < preloaded; ++i) {
    const std::string k = paired_key(i);
    ASSERT_EQ(f.tree->insert(as_key(k), conc_value_of(k)), Status::ok);
    ref.emplace(k, conc_value_of(k));
  }
  Done done(universe);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < kReaders; ++r)
    th.emplace_back(conc_reader, std::ref(*f.tree), std::cref(stop), preloaded,
                    universe, false, &done, r + 1, std::ref(errors), std::ref(reads));
  const OwnedAndShared ins = insert_owned_and_shared(
      *f.tree, kWriters, preloaded, fresh, paired_key, conc_value_of,
      [&](unsigned i) { done.v[i].store(true, std::memory_order_release); });
  stop = true;
  for (auto& t : th) t.join();
  EXPECT_EQ(errors.load(), 0u);  // the readers
  EXPECT_EQ(ins.errors, 0u);
  EXPECT_EQ(ins.shared_ok, fresh / (kWriters + 1));  // one success per shared key
  for (unsigned j = 0; j < fresh; ++j)
    ref.emplace(paired_key(preloaded + j), conc_value_of(paired_key(preloaded + j)));
  expect_grown(GetParam(), f.tree->stats(), f.work);
  f.check(ref);
  std::printf("[%s concurrency] %llu reader ops\n", GetParam().name().c_str(),
              static_cast<unsigned long long>(reads.load()));
}

// Writers remove half the loaded keys (nodes shrink 256→48→16→4 and merge away), upsert and
// update the others and insert new ones, while readers look up and scan.
TEST_P(ReadersDuringWriters, RemovesInsertsAndUpsertsWhileReadersScan) {
  Fixture f(GetParam());
  const unsigned n = 2500 * f.work;
  constexpr unsigned kWriters = 3;
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(f.tree->insert(as_key(paired_key(i)), conc_value_of(paired_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < 2; ++r)
    th.emplace_back(conc_reader, std::ref(*f.tree), std::cref(stop), n, 2 * n, true,
                    nullptr, 7u + r, std::ref(errors), std::ref(reads));
  run_striped_writers(kWriters, 2 * n, errors, [&](unsigned i) {
    const std::string k = paired_key(i);
    if (i >= n) return f.tree->insert(as_key(k), conc_value_of(k));
    if (i % 4 != 3) return f.tree->remove(as_key(k));
    if (i % 8 == 3) return f.tree->upsert(as_key(k), conc_value_of(k));
    return f.tree->update(as_key(k), conc_value_of(k));
  });
  stop = true;
  for (auto& t : th) t.join();
  EXPECT_EQ(errors.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < 2 * n; ++i)
    if (i >= n || i % 4 == 3) ref.emplace(paired_key(i), conc_value_of(paired_key(i)));
  f.check(ref);
}

// Keys churned around readers: every key of a small set is removed and inserted again over
// and over (WOART reuses the freed NODE4/NODE16/NODE48 slot: the stamp check), while
// readers must never see a foreign value and keys never touched must stay found.
TEST_P(ReadersDuringWriters, ChurnOfRemovedAndReinsertedKeys) {
  Fixture f(GetParam());
  const unsigned stable = 600, churn = 200, rounds = 20 * f.work;
  for (unsigned i = 0; i < stable + churn; ++i)
    ASSERT_EQ(f.tree->insert(as_key(paired_key(i)), conc_value_of(paired_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::thread rd([&] {
    std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed) || n < 200) {
      ++n;
      const unsigned i = static_cast<unsigned>((n * 2654435761u) % (stable + churn));
      const std::string k = paired_key(i);
      const auto got = f.tree->lookup(as_key(k));
      if ((i < stable && !got) || (got && *got != conc_value_of(k))) {
        errors.fetch_add(1);
        ADD_FAILURE() << "reader: key " << i << (got ? " foreign value" : " missing");
      }
      if (n % 8 == 0) checked_scan(*f.tree, k, 50, false, errors);
    }
    reads.fetch_add(n);
  });
  churn_with_two_writers(*f.tree, stable, churn, rounds, errors);
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < stable + churn; ++i) ref.emplace(paired_key(i), conc_value_of(paired_key(i)));
  f.check(ref);
}

// A scan's visitor calls back into the tree (a lookup of the key it was given, and now and
// then an update of it) while writers remove and re-insert keys, retiring nodes: the inner
// lookup's pin must not end the scan's (epoch.h: Pin and NestablePin hold different words),
// or the nodes the scan still walks could be freed and reused under it.
TEST_P(ReadersDuringWriters, ScanVisitorsCallBackIntoTheTree) {
  Fixture f(GetParam());
  const unsigned stable = 1500, churn = 600, rounds = 6 * f.work;
  for (unsigned i = 0; i < stable + churn; ++i)
    ASSERT_EQ(f.tree->insert(as_key(paired_key(i)), conc_value_of(paired_key(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, visited{0};
  std::thread rd([&] {
    std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed) || n < 20) {
      ++n;
      std::string prev;
      f.tree->scan(as_key(paired_key(static_cast<unsigned>(n * 7919 % (stable + churn)))), 400,
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
  churn_with_two_writers(*f.tree, stable, churn, rounds, errors);
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(visited.load(), 0u);
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < stable + churn; ++i) ref.emplace(paired_key(i), conc_value_of(paired_key(i)));
  f.check(ref);
}

// Writers empty the whole index and fill it again (the root goes away and the first node
// or leaf is made again) while a reader looks up and scans.
TEST_P(ReadersDuringWriters, DrainToEmptyAndRefill) {
  Fixture f(GetParam());
  const unsigned n = 300, rounds = 10 * f.work;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::thread rd(conc_reader, std::ref(*f.tree), std::cref(stop), 0u, n, true, nullptr, 3u,
                 std::ref(errors), std::ref(reads));
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (unsigned r = 0; r < rounds; ++r) {
        for (unsigned i = w; i < n; i += 2)
          if (f.tree->insert(as_key(paired_key(i)), conc_value_of(paired_key(i))) != Status::ok)
            errors.fetch_add(1);
        for (unsigned i = w; i < n; i += 2)
          if (f.tree->remove(as_key(paired_key(i))) != Status::ok) errors.fetch_add(1);
      }
    });
  for (auto& w : writers) w.join();
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  f.check({});
}

INSTANTIATE_TEST_SUITE_P(ConcurrentKinds, ReadersDuringWriters,
                         ::testing::ValuesIn(kind_shapes(kConc, /*concurrent=*/true)),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace wort::test
