// ROART under concurrency (ROWEX, paper 001 §3.4.1): lock-free readers, writers that lock
// the nodes they change (generation-tagged lock words), unlinked blocks freed through epochs.
// Writers insert disjoint and overlapping keys and remove while readers look up and scan;
// the keys share prefixes so that leaf arrays grow (4→12→28→64) and split and inner nodes
// grow (N4→…→N256) under the readers. Every value is a function of its key, so a reader can
// check whatever it sees; afterwards the tree is compared with the reference, verified and
// audited (no block leaked or freed twice once the epochs drain).
//
// Built normally this checks the protocol's outcome; built with -fsanitize=thread it is the
// data-race check (src/index/roart/README.md, "Concurrency", says how to run it).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"
#include "support/conc_fixture.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

using roart::Roart;

#if defined(__SANITIZE_THREAD__)
constexpr unsigned kScale = 1;  // TSan runs ~10x slower
#else
constexpr unsigned kScale = 4;
#endif

constexpr auto value_of = conc_value_of;  // support/conc_fixture.h

//! Keys in groups that share 7 bytes (arrays fill, grow and split), under 40 first bytes
//! (the root grows to an N48).
std::string key_of(unsigned i) {
  const std::uint64_t group = i / 150, first = group % 40;
  return u64_str(first << 56 | group << 16 | (i % 150) * 7);
}

struct Fixture {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Roart> tree;
  Fixture() { make_memory_tree(&pool, &tree, {}, 256ull << 20, 1u << 20); }
  //! The whole tree against `ref`: lookups, one full scan, verify, allocator audit.
  void check(const std::map<std::string, Value>& ref) {
    (void)tree->lookup(as_key(std::string("x")));  // the last unpin frees what is retired
    EXPECT_EQ(tree->retired_pending(), 0u);
    for (const auto& [k, v] : ref) {
      const auto got = tree->lookup(as_key(k));
      ASSERT_TRUE(got.has_value()) << "missing " << k.size();
      ASSERT_EQ(*got, v);
    }
    std::vector<std::string> seen;
    tree->scan(Key{}, ref.size() + 10, [&](Key k, Value) {
      seen.emplace_back(reinterpret_cast<const char*>(k.data()), k.size());
      return true;
    });
    ASSERT_EQ(seen.size(), ref.size());
    auto it = ref.begin();
    for (std::size_t i = 0; i < seen.size(); ++i, ++it) ASSERT_EQ(seen[i], it->first) << i;
    ASSERT_TRUE(tree->verify().ok()) << tree->verify().error().message;
    const auto audit = pool->allocator().audit(
        [&](pm::BlockVisitor bv) { return tree->visit_blocks(bv); });
    EXPECT_TRUE(audit.ok()) << audit.describe();
  }
};

//! A reader: lookups of keys that must be there (loaded before the writers started) and of
//! keys that may be, and scans whose keys must ascend with the right values.
void reader(Roart& t, const std::atomic<bool>& stop, unsigned preloaded, unsigned universe,
            unsigned seed, std::atomic<std::uint64_t>& errors, std::atomic<std::uint64_t>& ops) {
  Xorshift next = reader_rng(seed);
  std::uint64_t n = 0;
  while (!stop.load(std::memory_order_relaxed) || n < 200) {
    ++n;
    const unsigned i = static_cast<unsigned>(next() % universe);
    const std::string k = key_of(i);
    const auto got = t.lookup(as_key(k));
    if (i < preloaded && !got) {  // a loaded key vanished
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: loaded key " << i << " not found";
    }
    if (got && *got != value_of(k)) {  // a torn or foreign value
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: key " << i << " has a foreign value";
    }
    if (n % 16 == 0) checked_scan(t, k, 100, false, errors);
  }
  ops.fetch_add(n);
}

TEST(RoartConcurrency, InsertsDisjointAndOverlappingWhileReadersScan) {
  Fixture f;
  constexpr unsigned kWriters = 3, kReaders = 2;
  // Keys past the loaded ones, walked in the same order by every writer (so that they meet
  // in the same arrays and nodes): key j belongs to writer j % 4 if that is < 3, else to
  // all of them (overlapping: exactly one insert may succeed).
  const unsigned preloaded = 1000 * kScale, fresh = 3000 * kScale;
  std::map<std::string, Value> ref;
  for (unsigned i = 0; i < preloaded; ++i) {
    ASSERT_EQ(f.tree->insert(as_key(key_of(i)), value_of(key_of(i))), Status::ok);
    ref.emplace(key_of(i), value_of(key_of(i)));
  }
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < kReaders; ++r)
    th.emplace_back(reader, std::ref(*f.tree), std::cref(stop), preloaded, preloaded + fresh,
                    r + 1, std::ref(errors), std::ref(reads));
  const OwnedAndShared ins = insert_owned_and_shared(
      *f.tree, kWriters, preloaded, fresh, key_of, value_of,
      [](unsigned) {});
  stop = true;
  for (auto& t : th) t.join();
  EXPECT_EQ(errors.load(), 0u);  // the readers
  EXPECT_EQ(ins.errors, 0u);
  EXPECT_EQ(ins.shared_ok, (fresh + kWriters) / (kWriters + 1));  // one success per key
  for (unsigned j = 0; j < fresh; ++j) ref.emplace(key_of(preloaded + j), value_of(key_of(preloaded + j)));
  const auto st = f.tree->stats();
  EXPECT_GE(st.nodes.count("node48") + st.nodes.count("node256"), 1u);
  f.check(ref);
  std::printf("[roart concurrency] %llu reader ops\n", (unsigned long long)reads.load());
}

TEST(RoartConcurrency, RemovesInsertsAndUpsertsWhileReadersScan) {
  Fixture f;
  const unsigned n = 2000 * kScale;
  constexpr unsigned kWriters = 3;
  std::map<std::string, Value> ref;
  // writer w owns keys i with i % kWriters == w: removes the loaded ones with i % 2 == 0
  // (arrays shrink, nodes shrink and merge), re-upserts the rest, inserts new ones
  for (unsigned i = 0; i < n; ++i)
    ASSERT_EQ(f.tree->insert(as_key(key_of(i)), value_of(key_of(i))), Status::ok);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::thread rd(reader, std::ref(*f.tree), std::cref(stop), 0, 2 * n, 7u, std::ref(errors),
                 std::ref(reads));
  run_striped_writers(kWriters, 2 * n, errors, [&](unsigned i) {
    const std::string k = key_of(i);
    if (i >= n) return f.tree->insert(as_key(k), value_of(k));
    if (i % 2 == 0) return f.tree->remove(as_key(k));
    return f.tree->upsert(as_key(k), value_of(k));
  });
  stop = true;
  rd.join();
  EXPECT_EQ(errors.load(), 0u);
  for (unsigned i = 0; i < 2 * n; ++i)
    if (i >= n || i % 2 == 1) ref.emplace(key_of(i), value_of(key_of(i)));
  f.check(ref);
}

// After a restart every node's metadata is stale; concurrent first touches are latched by
// the lock word, so each node and array is rebuilt exactly once however many readers race.
TEST(RoartConcurrency, GenerationRebuildIsLatchedOncePerNode) {
  std::unique_ptr<Pool> pool;
  ASSERT_NO_FATAL_FAILURE(make_memory_pool(&pool, Roart::kKind, 64ull << 20, 1u << 20));
  const unsigned n = 3000;
  {
    auto t = std::move(Roart::create(*pool, IndexOptions{})).value();
    for (unsigned i = 0; i < n; ++i)
      ASSERT_EQ(t->insert(as_key(key_of(i)), value_of(key_of(i))), Status::ok);
  }
  const std::size_t size = pool->size();
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> copy(static_cast<std::byte*>(std::aligned_alloc(64, size)));
  std::memcpy(copy.get(), pool->base(), size);  // as after a crash: no clean shutdown
  pool.reset();
  auto p2 = Pool::attach({copy.get(), size}, "roart");
  ASSERT_TRUE(p2) << p2.error().message;
  auto t = std::move(Roart::open(**p2)).value();
  const auto st = t->stats();
  std::uint64_t blocks = 0;
  for (const auto& [type, count] : st.nodes)
    if (type != "leaf") blocks += count;
  std::atomic<std::uint64_t> errors{0};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < 4; ++r)
    th.emplace_back([&, r] {
      for (unsigned i = r; i < n + r; ++i) {
        const std::string k = key_of(i % n);
        const auto got = t->lookup(as_key(k));
        if (!got || *got != value_of(k)) errors.fetch_add(1);
      }
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(t->rebuilds(), blocks);  // every node and array once, none twice
}

}  // namespace
}  // namespace wort::test
