// tests/support/conc_fixture.h — what every index's concurrency tests share: the scale
// (TSan runs fewer operations), the value stored for a key (a function of it, so a reader
// can check whatever it sees) and the fixture (an in-memory pool and a tree of type Tree,
// and check(): the whole tree against a reference, verify, allocator audit).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
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

}  // namespace wort::test
