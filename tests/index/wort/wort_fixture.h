// tests/index/wort/wort_fixture.h — a WORT tree in an 8 MiB in-memory pool, for the unit tests
// that need one empty tree per test (wort_lookup_test, wort_fresh_test).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "index/wort/wort_tree.h"
#include "support/tree_fixture.h"
#include "wort/pool.h"

namespace wort::test {

class WortTreeTest : public ::testing::Test {
 protected:
  void SetUp() override { make_memory_tree(&pool_, &tree_, {}, 8u << 20, 64u << 10); }

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<WortTree> tree_;
};

}  // namespace wort::test
