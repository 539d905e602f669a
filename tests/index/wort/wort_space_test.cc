// Running out of pool space is a Status, and leaves the tree as it was (STYLE.md: an
// operation that fails halfway leaves the structure consistent).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"

namespace wort::test {
namespace {

TEST(WortSpace, OutOfSpaceLeavesTheTreeIntactAndFreedSpaceIsReused) {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<WortTree> tree;
  ASSERT_NO_FATAL_FAILURE(make_memory_tree(&pool, &tree, {}, 1u << 20, 16u << 10));
  WortTree& t = *tree;

  const auto keys = make_keys(Gen::long_keys, 5000, 3);
  std::map<std::string, Value> ref;
  std::size_t i = 0;
  Status s = Status::ok;
  for (; i < keys.size(); ++i) {
    s = t.insert(as_key(keys[i]), i);
    if (s != Status::ok) break;
    ref[keys[i]] = i;
  }
  ASSERT_EQ(s, Status::out_of_space) << "the pool never filled up";
  std::cout << "[wort space] out of space after " << ref.size() << " long keys\n";
  EXPECT_FALSE(t.lookup(as_key(keys[i])).has_value());
  for (const auto& [k, v] : ref) ASSERT_EQ(t.lookup(as_key(k)), std::optional<Value>(v));
  ASSERT_TRUE(t.verify());
  auto audit = pool->allocator().audit([&](pm::BlockVisitor v) { return t.visit_blocks(v); });
  EXPECT_TRUE(audit.ok()) << audit.describe();

  // Remove half; the freed blocks take new keys again.
  std::size_t removed = 0;
  for (auto it = ref.begin(); it != ref.end();) {
    if (removed++ % 2 == 0) {
      ASSERT_EQ(t.remove(as_key(it->first)), Status::ok);
      it = ref.erase(it);
    } else {
      ++it;
    }
  }
  EXPECT_EQ(t.insert(as_key(keys[i]), i), Status::ok);
  ref[keys[i]] = i;
  for (const auto& [k, v] : ref) ASSERT_EQ(t.lookup(as_key(k)), std::optional<Value>(v));
  EXPECT_TRUE(t.verify());
  EXPECT_EQ(t.stats().keys, ref.size());
}

}  // namespace
}  // namespace wort::test
