// Linearizability of one key, for every concurrent kind (registry entry `concurrent`) on the
// shapes of its row in tests/conformance/kinds.h (kConc), through the type-erased handle
// (which takes no lock for a concurrent kind). Writers upsert the key with unique values
// and churn its neighbours (its node shifts, splits, merges and grows around it), readers
// look it up. Each lookup must return a value some write began to store before the lookup
// ended and that no write which began after that one ended had overwritten (completed)
// before the lookup began. Time is one shared ticket counter.
// Built with WORT_TSAN=ON (a *_concurrency_test.cc) this is also a data-race check.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "conformance/kinds.h"
#include "support/keygen.h"
#include "support/conc_fixture.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

struct Span {
  std::uint64_t start, end;
};
struct Read {
  std::uint64_t start, end;
  Value v;
};

constexpr unsigned kWriters = 2, kReaders = 2;

//! The number of lookups in `reads` that no linearisation of `writes` explains (write s of
//! writer w stored (w + 1) << 32 | s; the preloaded value 0 is write 0, at time 0).
std::uint64_t unexplained(const std::vector<std::vector<Span>>& writes,
                          const std::vector<std::vector<Read>>& reads, unsigned per_writer,
                          std::uint64_t& checked) {
  std::vector<Span> by_start{{0, 0}};
  for (unsigned w = 0; w < kWriters; ++w)
    for (unsigned s = 1; s <= per_writer; ++s) by_start.push_back(writes[w][s]);
  std::sort(by_start.begin(), by_start.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  // suffix minimum of the ends, over writes sorted by start
  std::vector<std::uint64_t> suffix_min_end(by_start.size() + 1, ~std::uint64_t{0});
  for (std::size_t i = by_start.size(); i-- > 0;)
    suffix_min_end[i] = std::min(suffix_min_end[i + 1], by_start[i].end);
  std::uint64_t bad = 0;
  for (const auto& rv : reads)
    for (const Read& x : rv) {
      ++checked;
      if (x.v == ~Value{0}) {  // the key is never removed
        ++bad;
        continue;
      }
      const unsigned w = static_cast<unsigned>(x.v >> 32), s = static_cast<unsigned>(x.v);
      if ((w == 0 && s != 0) || w > kWriters || s > per_writer) {
        ++bad;
        continue;
      }
      const Span sp = w == 0 ? Span{0, 0} : writes[w - 1][s];
      if (sp.start > x.end) ++bad;  // a value written after the lookup ended
      // a write that began after this one ended and itself ended before the lookup began
      const auto it = std::upper_bound(by_start.begin(), by_start.end(), sp.end,
                                       [](std::uint64_t t, const Span& a) { return t < a.start; });
      if (suffix_min_end[static_cast<std::size_t>(it - by_start.begin())] < x.start) ++bad;
    }
  return bad;
}

// The check itself, on a made-up history: it must refuse a value overwritten before the
// lookup began, a value written after the lookup ended, and a value never written.
TEST(LinearizabilityCheck, RefusesStaleFutureAndUnknownValues) {
  const unsigned per_writer = 2;
  std::vector<std::vector<Span>> writes(kWriters, std::vector<Span>(per_writer + 1));
  writes[0][1] = {10, 11};
  writes[0][2] = {20, 21};
  writes[1][1] = {100, 101};
  writes[1][2] = {102, 103};
  const auto v = [](std::uint64_t w, std::uint64_t s) { return Value{(w + 1) << 32 | s}; };
  std::vector<std::vector<Read>> reads(kReaders);
  reads[0] = {{15, 16, v(0, 1)},   // fine: write 1 done, write 2 not begun
              {2, 3, Value{0}},    // fine: the preloaded value before any write
              {19, 22, v(0, 2)}};  // fine: overlaps write 2
  std::uint64_t checked = 0;
  EXPECT_EQ(unexplained(writes, reads, per_writer, checked), 0u);
  reads[1] = {{30, 31, v(0, 1)},   // stale: write 2 ended before the lookup began
              {30, 31, Value{0}},  // stale: the preloaded value was overwritten
              {5, 6, v(0, 2)},     // from the future: write 2 began after the lookup ended
              {30, 31, v(0, 7)},   // never written
              {30, 31, ~Value{0}}};  // the key missing
  checked = 0;
  EXPECT_EQ(unexplained(writes, reads, per_writer, checked), 5u);
  EXPECT_EQ(checked, 8u);
}

class Linearizability : public ::testing::TestWithParam<KindShape> {};

TEST_P(Linearizability, SingleKeyLookupsAreLinearizable) {
  const KindShape& ks = GetParam();
  PoolOptions po;
  po.size = 256ull << 20;
  po.kind = ks.kind;
  auto pool = Pool::create_in_memory(po);
  ASSERT_TRUE(pool) << pool.error().message;
  auto made = registry::find(ks.kind)->create(**pool, ks.options());
  ASSERT_TRUE(made) << made.error().message;
  Index& ix = **made;
  ASSERT_TRUE(ix.concurrent());
  // neighbours, so that the key sits among others that come and go
  for (unsigned i = 0; i < 60; ++i)
    ASSERT_EQ(ix.insert(as_key(paired_key(i)), conc_value_of(paired_key(i))), Status::ok);
  const std::string key = paired_key(7);
  const unsigned per_writer = 3000 * kConcScale;
  std::atomic<std::uint64_t> clock{1};
  std::vector<std::vector<Span>> writes(kWriters, std::vector<Span>(per_writer + 1));
  std::vector<std::vector<Read>> reads(kReaders);
  ASSERT_EQ(ix.upsert(as_key(key), Value{0}), Status::ok);
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (unsigned r = 0; r < kReaders; ++r)
    th.emplace_back([&, r] {
      while (!stop.load(std::memory_order_relaxed) && reads[r].size() < 1000000) {
        Read x;
        x.start = clock.fetch_add(1);
        const auto got = ix.lookup(as_key(key));
        x.end = clock.fetch_add(1);
        x.v = got ? *got : ~Value{0};
        reads[r].push_back(x);
      }
    });
  std::vector<std::thread> ws;
  for (unsigned w = 0; w < kWriters; ++w)
    ws.emplace_back([&, w] {
      for (unsigned s = 1; s <= per_writer; ++s) {
        writes[w][s].start = clock.fetch_add(1);
        (void)ix.upsert(as_key(key), Value{(std::uint64_t{w} + 1) << 32 | s});
        writes[w][s].end = clock.fetch_add(1);
        const std::string nb = paired_key(20 + (s % 40) * 2 + w);
        if (s % 3 == 0) (void)ix.remove(as_key(nb));
        else (void)ix.upsert(as_key(nb), conc_value_of(nb));
      }
    });
  for (auto& w : ws) w.join();
  stop = true;
  for (auto& t : th) t.join();
  std::uint64_t checked = 0;
  EXPECT_EQ(unexplained(writes, reads, per_writer, checked), 0u) << "of " << checked << " lookups";
  EXPECT_GT(checked, 1000u);
  // A write with no reader pinned frees what the writes retired (support/conc_fixture.h).
  (void)ix.remove(as_key(std::string("no such key")));
  const auto v = ix.verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  std::printf("[%s linearizability] %llu lookups checked\n", ks.name().c_str(),
              static_cast<unsigned long long>(checked));
}

INSTANTIATE_TEST_SUITE_P(ConcurrentKinds, Linearizability,
                         ::testing::ValuesIn(kind_shapes(kConc, /*concurrent=*/true)),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace wort::test
