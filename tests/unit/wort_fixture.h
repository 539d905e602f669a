// tests/unit/wort_fixture.h — a WORT tree in an 8 MiB in-memory pool, for the unit tests
// that need one empty tree per test (wort_lookup_test, wort_fresh_test).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "index/wort/wort_tree.h"
#include "wort/pool.h"

namespace wort::test {

class WortTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolOptions o;
    o.size = 8u << 20;
    o.chunk_size = 64u << 10;
    o.kind = "wort";
    auto p = Pool::create_in_memory(o);
    ASSERT_TRUE(p) << p.error().message;
    pool_ = std::move(p).value();
    auto t = WortTree::create(*pool_, {});
    ASSERT_TRUE(t) << t.error().message;
    tree_ = std::move(t).value();
  }

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<WortTree> tree_;
};

}  // namespace wort::test
