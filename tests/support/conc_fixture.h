// tests/support/conc_fixture.h — what every index's concurrency tests share: the scale
// (TSan runs fewer operations), the value stored for a key (a function of it, so a reader
// can check whatever it sees) and the fixture (an in-memory pool and a tree of type Tree,
// and check(): the whole tree against a reference, verify, allocator audit).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pm/allocator.h"
#include "support/keygen.h"
#include "wort/index.h"
#include "wort/pool.h"

namespace wort::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr unsigned kConcScale = 1;  // TSan runs ~10x slower
#else
inline constexpr unsigned kConcScale = 4;
#endif

inline Value conc_value_of(const std::string& k) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : k) h = (h ^ static_cast<std::uint8_t>(c)) * 1099511628211ull;
  return h | 1;
}

//! The whole of `tree` (an index class or the type-erased Index) against `ref`: after a
//! write with no reader pinned nothing retired is left (`retired_pending`), lookups, one
//! full scan, verify, allocator audit.
template <class Tree, class Pending>
void conc_check(Tree& tree, Pool& pool, const std::map<std::string, Value>& ref,
                Pending retired_pending) {
  // A write with no reader pinned frees everything retired.
  (void)tree.remove(as_key(std::string("no such key")));
  EXPECT_EQ(retired_pending(), 0u);
  for (const auto& [k, v] : ref) {
    const auto got = tree.lookup(as_key(k));
    ASSERT_TRUE(got.has_value()) << "missing key of " << k.size() << " bytes";
    ASSERT_EQ(*got, v);
  }
  std::vector<std::string> seen;
  tree.scan(Key{}, ref.size() + 10, [&](Key k, Value) {
    seen.emplace_back(reinterpret_cast<const char*>(k.data()), k.size());
    return true;
  });
  ASSERT_EQ(seen.size(), ref.size());
  auto it = ref.begin();
  for (std::size_t i = 0; i < seen.size(); ++i, ++it) ASSERT_EQ(seen[i], it->first) << i;
  const auto v = tree.verify();
  ASSERT_TRUE(v.ok()) << v.error().message;
  const auto audit =
      pool.allocator().audit([&](pm::BlockVisitor bv) { return tree.visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
}

template <class Tree>
struct ConcFixture {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Tree> tree;
  explicit ConcFixture(const IndexOptions& io = IndexOptions{}) {
    PoolOptions o;
    o.size = 256ull << 20;
    o.chunk_size = 1u << 20;
    o.kind = std::string(Tree::kKind);
    pool = std::move(Pool::create_in_memory(o)).value();
    tree = std::move(Tree::create(*pool, io)).value();
  }
  //! The whole tree against `ref` (conc_check).
  void check(const std::map<std::string, Value>& ref) {
    conc_check(*tree, *pool, ref, [&] { return tree->retired_pending(); });
  }
};

//! xorshift64: the concurrency tests' cheap random numbers (a thread's own sequence).
struct Xorshift {
  std::uint64_t x;
  std::uint64_t operator()() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
};
//! A reader's sequence, by its seed.
inline Xorshift reader_rng(unsigned seed) { return Xorshift{seed * 0x9e3779b97f4a7c15ull + 1}; }

//! A scan from `from` of at most `max` entries whose keys must ascend (no repeats), not fall
//! below `from` when `bounded`, and carry conc_value_of(key): each violation counts in
//! `errors` and fails the test. Returns the keys seen, in order.
template <class Tree>
std::vector<std::string> checked_scan(Tree& t, const std::string& from, std::size_t max,
                                      bool bounded, std::atomic<std::uint64_t>& errors) {
  std::vector<std::string> seen;
  t.scan(as_key(from), max, [&](Key kk, Value v) {
    std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
    const bool order = !seen.empty() && s <= seen.back(), below = bounded && s < from,
               foreign = v != conc_value_of(s);
    if (order || below || foreign) {
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: scan " << (order ? "out of order or repeated " : "")
                    << (below ? "below its bound " : "") << (foreign ? "foreign value " : "")
                    << "at its " << seen.size() << "th key (" << s.size() << " bytes)";
    }
    seen.push_back(std::move(s));
    return true;
  });
  return seen;
}

//! A range [lo, hi) whose keys must lie inside it, ascend and carry conc_value_of(key): each
//! violation counts in `errors` and fails the test.
template <class Tree>
void checked_range(Tree& t, const std::string& lo, const std::string& hi,
                   std::atomic<std::uint64_t>& errors) {
  std::string prev;
  t.range(as_key(lo), as_key(hi), [&](Key kk, Value v) {
    std::string s(reinterpret_cast<const char*>(kk.data()), kk.size());
    if (s < lo || s >= hi || (!prev.empty() && s <= prev) || v != conc_value_of(s)) {
      errors.fetch_add(1);
      ADD_FAILURE() << "reader: range outside its bounds, out of order or foreign value"
                    << " lo=" << testing::PrintToString(lo) << " hi=" << testing::PrintToString(hi)
                    << " s=" << testing::PrintToString(s)
                    << " prev=" << testing::PrintToString(prev) << " v=" << v
                    << " want=" << conc_value_of(s);
    }
    prev = std::move(s);
    return true;
  });
}

//! `writers` threads, writer w taking the keys w, w + writers, w + 2 * writers, ... below
//! `end`: op(i) must return ok for each (anything else counts in `errors` and fails the test).
template <class Op>
void run_striped_writers(unsigned writers, unsigned end, std::atomic<std::uint64_t>& errors,
                         Op op) {
  std::vector<std::thread> th;
  for (unsigned w = 0; w < writers; ++w)
    th.emplace_back([&, w] {
      for (unsigned i = w; i < end; i += writers) {
        const Status s = op(i);
        if (s != Status::ok) {
          errors.fetch_add(1);
          ADD_FAILURE() << "writer: op on key " << i << " gave status " << static_cast<int>(s);
        }
      }
    });
  for (auto& t : th) t.join();
}

//! What the writers of insert_owned_and_shared counted.
struct OwnedAndShared {
  std::uint64_t errors = 0;     //!< an owner's insert that failed, a shared one that failed
                                //!< other than with `exists`
  std::uint64_t shared_ok = 0;  //!< shared keys inserted (exactly one insert of each)
};

//! `writers` threads insert key_of(first + j) for j < fresh (value value_of(key)), all in
//! the same order so that they meet in the same nodes: key j belongs to writer
//! j % (writers + 1) if that is < writers, else to all of them (overlapping: exactly one
//! insert may succeed). on_ok(first + j) runs after each insert that succeeds. Returns when
//! every writer is done.
template <class Tree, class KeyOf, class ValueOf, class OnOk>
OwnedAndShared insert_owned_and_shared(Tree& tree, unsigned writers, unsigned first,
                                       unsigned fresh, KeyOf key_of, ValueOf value_of,
                                       OnOk on_ok) {
  std::atomic<unsigned> ready{0};
  std::atomic<std::uint64_t> errors{0}, shared_ok{0};
  std::vector<std::thread> th;
  for (unsigned w = 0; w < writers; ++w)
    th.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < writers) std::this_thread::yield();
      for (unsigned j = 0; j < fresh; ++j) {
        const unsigned owner = j % (writers + 1);
        if (owner != w && owner != writers) continue;
        const std::string k = key_of(first + j);
        const Status s = tree.insert(as_key(k), value_of(k));
        if (s == Status::ok) on_ok(first + j);
        if (owner == w && s != Status::ok) errors.fetch_add(1);
        if (owner == writers) {
          if (s == Status::ok) shared_ok.fetch_add(1);
          else if (s != Status::exists) errors.fetch_add(1);
        }
      }
    });
  for (auto& t : th) t.join();
  return {errors.load(), shared_ok.load()};
}

}  // namespace wort::test
