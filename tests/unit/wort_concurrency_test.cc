// WORT under concurrent use (src/index/wort/README.md, "Concurrency"): the engine's typed
// concurrency tests (tests/unit/pmart_concurrency.h) on WortTree, and WORT's own window
// tests: readers inside the one state a WORT write leaves between two of its stores — a
// node whose header a SplitCmp or a merge has rewritten before the commit that moves the
// node to the place the new header describes. A reader reaching the node through its old
// place sees a header whose depth disagrees with that place (the crash state RecoverHeader
// knows) and must not trust its prefix. The broken variant
// (wort_index::g_broken_reader_trusts_stale_prefix) does, and both window tests must catch
// it: deterministically (reads run inside the window, from the writer's hook) and with real
// threads (the hook holds the window open while reader threads scan).
// Also built and run by the ThreadSanitizer build (WORT_TSAN=ON).
#include "index/wort/wort_tree.h"
#include "unit/pmart_concurrency.h"

#include <chrono>
#include <random>
#include <set>

namespace wort::test {

template <>
struct ConcNodeGrowth<WortTree> {
  static void expect(const IndexStats& st) {
    ASSERT_EQ(st.nodes.count("node" + std::to_string(wort_index::kFanout)), 1u);
    EXPECT_GE(st.nodes.at("node" + std::to_string(wort_index::kFanout)), 100u);
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(wort, PmartConcurrency, ::testing::Types<WortTree>);

namespace {

using wort_index::g_broken_reader_trusts_stale_prefix;
using wort_index::g_header_window_ctx;
using wort_index::g_header_window_hook;

//! Keys with short compressed paths between their branch positions (so headers hold their
//! whole prefix, which a scan uses when the depth agrees): 4 values at each of 4 nibble
//! positions (`shift` picks one of two layouts); inserted in random order they make leaf
//! splits and SplitCmps at every level, removed in random order merges with node survivors.
std::uint64_t window_key(unsigned layout, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                         std::uint64_t d) {
  const unsigned pos[2][4] = {{28, 16, 4, 0}, {40, 24, 12, 4}};
  return 0x5a00000000000000ull | (a + 1) << pos[layout][0] | b << pos[layout][1] |
         (c * 5) << pos[layout][2] | (d * 3 + 1) << pos[layout][3];
}
//! All 256 keys of a layout in ascending order.
std::vector<std::uint64_t> window_keys(unsigned layout) {
  std::vector<std::uint64_t> ks;
  for (std::uint64_t a = 0; a < 4; ++a)
    for (std::uint64_t b = 0; b < 4; ++b)
      for (std::uint64_t c = 0; c < 4; ++c)
        for (std::uint64_t d = 0; d < 4; ++d) ks.push_back(window_key(layout, a, b, c, d));
  return ks;
}

Value value_of(std::uint64_t k) { return conc_value_of(u64_str(k)); }

struct Fixture {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<WortTree> tree;
  Fixture() {
    PoolOptions o;
    o.size = 64ull << 20;
    o.chunk_size = 1u << 20;
    o.kind = "wort";
    pool = std::move(Pool::create_in_memory(o)).value();
    tree = std::move(WortTree::create(*pool, IndexOptions{})).value();
  }
};

//! Every read of `t` against `ref` (lookups of present and absent keys; a full scan; scans
//! and ranges from each key and from points between keys). Returns the mismatches.
std::uint64_t reads_mismatch(const WortTree& t, const std::set<std::uint64_t>& ref,
                             const std::vector<std::uint64_t>& universe) {
  std::uint64_t bad = 0;
  for (std::uint64_t k : universe) {
    const auto got = t.lookup(Key(u64_key(k)));
    if (ref.count(k) ? got != std::optional<Value>(value_of(k)) : got.has_value()) ++bad;
  }
  // a scan of up to kMax keys must return exactly the first kMax of ref from its bound
  constexpr std::size_t kMax = 24;
  auto scan_from = [&](std::uint64_t from, std::size_t max) {
    std::vector<std::uint64_t> got;
    t.scan(Key(u64_key(from)), max, [&](Key k, Value v) {
      got.push_back(key_u64(k));
      if (v != value_of(got.back())) ++bad;
      return true;
    });
    auto lo = ref.lower_bound(from);
    const auto want = std::min<std::size_t>(max, std::distance(lo, ref.end()));
    if (got.size() != want || !std::equal(got.begin(), got.end(), lo)) ++bad;
  };
  scan_from(0, ref.size() + 1);
  // every key of the universe as a bound (TSan, ~20x slower: every 4th)
  const std::size_t stride = kConcScale == 1 ? 4 : 1;
  for (std::size_t i = 0; i < universe.size(); i += stride) {
    const std::uint64_t k = universe[i];
    scan_from(k, kMax);
    scan_from(k + 1, kMax);  // between keys: the lower bound lands inside a node's prefix
    scan_from(k - 1, kMax);
  }
  for (std::size_t i = 0; i + 7 < universe.size(); i += 7) {  // bounded ranges
    const std::uint64_t lo = std::min(universe[i], universe[i + 7]) + 1;
    const std::uint64_t hi = std::max(universe[i], universe[i + 7]);
    std::vector<std::uint64_t> got;
    t.range(Key(u64_key(lo)), Key(u64_key(hi)), [&](Key k, Value) {
      got.push_back(key_u64(k));
      return true;
    });
    if (!std::equal(got.begin(), got.end(), ref.lower_bound(lo), ref.lower_bound(hi)) ||
        got.size() != static_cast<std::size_t>(
                          std::distance(ref.lower_bound(lo), ref.lower_bound(hi))))
      ++bad;
  }
  return bad;
}

//! The deterministic window scenario: every key of both layouts inserted, then removed, in
//! random order; inside every window (a SplitCmp's or a merge's rewritten header before its
//! commit) the whole tree is read against the state before the write. Returns the
//! mismatches seen inside windows; `windows` counts them.
std::uint64_t window_scenario(std::uint64_t seed, std::uint64_t* windows) {
  struct Ctx {
    const WortTree* tree;
    const std::set<std::uint64_t>* ref;
    const std::vector<std::uint64_t>* universe;
    std::uint64_t bad = 0, windows = 0;
  };
  std::uint64_t bad = 0;
  *windows = 0;
  // passes: layouts 0 and 1 in random order, then in ascending order removed descending
  // (each new (a, b, c) group splits the compressed path the groups before it left; each
  // emptied group merges its parent into a node survivor)
  for (unsigned pass = 0; pass < 4; ++pass) {
    const unsigned layout = pass % 2;
    const bool random = pass < 2;
    Fixture f;
    std::vector<std::uint64_t> keys = window_keys(layout);
    std::set<std::uint64_t> ref;
    Ctx ctx{f.tree.get(), &ref, &keys};
    g_header_window_ctx = &ctx;
    g_header_window_hook.store(+[](void* p) {
      auto* c = static_cast<Ctx*>(p);
      ++c->windows;
      c->bad += reads_mismatch(*c->tree, *c->ref, *c->universe);
    });
    std::mt19937_64 rng(seed + pass);
    std::vector<std::uint64_t> order = keys;
    if (random) std::shuffle(order.begin(), order.end(), rng);
    for (std::uint64_t k : order) {
      EXPECT_EQ(f.tree->insert(Key(u64_key(k)), value_of(k)), Status::ok);
      ref.insert(k);
    }
    if (random) std::shuffle(order.begin(), order.end(), rng);
    else std::reverse(order.begin(), order.end());
    for (std::uint64_t k : order) {
      EXPECT_EQ(f.tree->remove(Key(u64_key(k))), Status::ok);
      ref.erase(k);
    }
    g_header_window_hook.store(nullptr);
    g_header_window_ctx = nullptr;
    bad += ctx.bad;
    *windows += ctx.windows;
  }
  return bad;
}

// Reads inside every window see exactly the tree before the write (the new key absent, the
// removed one present, every other key found by lookup, scan and range).
TEST(WortConcurrency, ReadsInsideSplitAndMergeWindowsAreExact) {
  if constexpr (wort_index::kSpanBits != 4) GTEST_SKIP() << "the window keys are laid out for 4-bit spans";
  std::uint64_t windows = 0;
  EXPECT_EQ(window_scenario(42, &windows), 0u);
  EXPECT_GE(windows, 80u) << "the scenario must open SplitCmp and merge windows";
  std::printf("[wort windows] %llu windows read\n", static_cast<unsigned long long>(windows));
}

// The broken variant: a reader that uses a stored prefix whose depth disagrees with its
// place gets scans wrong inside the windows.
TEST(WortConcurrency, BrokenReaderTrustingAStalePrefixIsCaughtInTheWindows) {
  if constexpr (wort_index::kSpanBits != 4) GTEST_SKIP() << "the window keys are laid out for 4-bit spans";
  g_broken_reader_trusts_stale_prefix = true;
  std::uint64_t windows = 0;
  const std::uint64_t bad = window_scenario(42, &windows);
  g_broken_reader_trusts_stale_prefix = false;
  EXPECT_GT(bad, 0u) << "the broken reader went unnoticed in " << windows << " windows";
  std::printf("[wort windows, broken reader] %llu mismatches in %llu windows\n",
              static_cast<unsigned long long>(bad), static_cast<unsigned long long>(windows));
}

//! The threaded scenario: one writer inserts and removes the churn keys (both layouts, every
//! key but the stable ones) in random order, rounds over, its hook holding each window open for a
//! while; two readers look up and scan. The stable keys are never removed: a lookup
//! must find them, and a scan must return every one of them between its bound and the last
//! key it returned. Runs until `limit` or, if `stop_on_error`, the first error. Returns the
//! errors; `windows` counts the windows opened.
std::uint64_t threaded_scenario(std::chrono::milliseconds limit, bool stop_on_error,
                                std::uint64_t* windows) {
  Fixture f;
  std::vector<std::uint64_t> all;
  std::set<std::uint64_t> stable;
  std::vector<std::uint64_t> churn;
  // stable: b == 0 and d == 0 — each a's subtree then keeps a node on c whose compressed
  // path spans b's position, which every churn key with b != 0 splits (SplitCmp) and whose
  // removal merges back (a node survivor)
  for (unsigned layout = 0; layout < 2; ++layout)
    for (std::uint64_t a = 0; a < 4; ++a)
      for (std::uint64_t b = 0; b < 4; ++b)
        for (std::uint64_t c = 0; c < 4; ++c)
          for (std::uint64_t d = 0; d < 4; ++d) {
            const std::uint64_t k = window_key(layout, a, b, c, d);
            all.push_back(k);
            if (b == 0 && d == 0) stable.insert(k);
            else churn.push_back(k);
          }
  for (std::uint64_t k : stable) EXPECT_EQ(f.tree->insert(Key(u64_key(k)), value_of(k)), Status::ok);
  std::atomic<std::uint64_t> opened{0};
  g_header_window_ctx = &opened;
  g_header_window_hook.store(+[](void* p) {
    static_cast<std::atomic<std::uint64_t>*>(p)->fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::microseconds(30));
  });
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0};
  const std::vector<std::uint64_t> stable_v(stable.begin(), stable.end());
  auto reader = [&](unsigned seed) {
    std::mt19937_64 rng(seed);
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t from = all[rng() % all.size()] + (rng() % 3) - 1;
      std::vector<std::uint64_t> got;
      f.tree->scan(Key(u64_key(from)), 40, [&](Key k, Value v) {
        got.push_back(key_u64(k));
        if (v != value_of(got.back()) || got.back() < from ||
            (got.size() > 1 && got.back() <= got[got.size() - 2]))
          errors.fetch_add(1);
        return true;
      });
      // every stable key in [from, last returned] (all of them from `from` on, if the scan
      // ended before its limit) was returned
      const std::uint64_t last = got.size() == 40 ? got.back() : ~std::uint64_t{0};
      std::size_t j = 0;
      for (auto it = stable.lower_bound(from); it != stable.end() && *it <= last; ++it) {
        while (j < got.size() && got[j] < *it) ++j;
        if (j == got.size() || got[j] != *it) {
          errors.fetch_add(1);
          break;
        }
      }
      const std::uint64_t s = stable_v[rng() % stable_v.size()];
      if (f.tree->lookup(Key(u64_key(s))) != std::optional<Value>(value_of(s))) errors.fetch_add(1);
      if (stop_on_error && errors.load(std::memory_order_relaxed) != 0) stop = true;
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::mt19937_64 rng(7);
  while (!stop.load() && std::chrono::steady_clock::now() < deadline) {
    std::shuffle(churn.begin(), churn.end(), rng);
    for (std::uint64_t k : churn)
      if (f.tree->insert(Key(u64_key(k)), value_of(k)) != Status::ok) errors.fetch_add(1);
    std::shuffle(churn.begin(), churn.end(), rng);
    for (std::uint64_t k : churn)
      if (f.tree->remove(Key(u64_key(k))) != Status::ok) errors.fetch_add(1);
  }
  stop = true;
  r1.join();
  r2.join();
  g_header_window_hook.store(nullptr);
  g_header_window_ctx = nullptr;
  *windows = opened.load();
  if (!stop_on_error) {  // the tree holds exactly the stable keys, verified
    std::vector<std::uint64_t> left;
    f.tree->scan(Key{}, all.size(), [&](Key k, Value) {
      left.push_back(key_u64(k));
      return true;
    });
    EXPECT_EQ(left, stable_v);
    const auto v = f.tree->verify();
    EXPECT_TRUE(v.ok()) << v.error().message;
    (void)f.tree->remove(Key(u64_key(0)));  // no reader pinned: everything retired is freed
    EXPECT_EQ(f.tree->retired_pending(), 0u);
    const auto audit = f.pool->allocator().audit(
        [&](pm::BlockVisitor bv) { return f.tree->visit_blocks(bv); });
    EXPECT_TRUE(audit.ok()) << audit.describe();
  }
  return errors.load();
}

TEST(WortConcurrency, ThreadedReadersDuringSplitsAndMergesMissNoStableKey) {
  if constexpr (wort_index::kSpanBits != 4) GTEST_SKIP() << "the window keys are laid out for 4-bit spans";
  std::uint64_t windows = 0;
  EXPECT_EQ(threaded_scenario(std::chrono::milliseconds(1500), false, &windows), 0u);
  EXPECT_GT(windows, 0u);
  std::printf("[wort threaded windows] %llu windows held open\n",
              static_cast<unsigned long long>(windows));
}

TEST(WortConcurrency, BrokenReaderIsCaughtByThreadedReaders) {
  if constexpr (wort_index::kSpanBits != 4) GTEST_SKIP() << "the window keys are laid out for 4-bit spans";
  g_broken_reader_trusts_stale_prefix = true;
  std::uint64_t windows = 0;
  const std::uint64_t errors = threaded_scenario(std::chrono::milliseconds(20000), true, &windows);
  g_broken_reader_trusts_stale_prefix = false;
  EXPECT_GT(errors, 0u) << "the broken reader went unnoticed in " << windows << " windows";
  std::printf("[wort threaded windows, broken reader] caught after %llu windows\n",
              static_cast<unsigned long long>(windows));
}

}  // namespace
}  // namespace wort::test
