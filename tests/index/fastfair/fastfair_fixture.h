// tests/index/fastfair/fastfair_fixture.h — a FAST&FAIR tree in an in-memory pool that can be
// "crashed" and reopened (the pool's bytes copied as they are, then opened: recovery).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "index/fastfair/fastfair_tree.h"
#include "support/keygen.h"
#include "wort/pool.h"

namespace wort::test {

struct FastFairFixture {
  explicit FastFairFixture(std::uint64_t node_size = 256, std::uint64_t pool_size = 16u << 20) {
    PoolOptions po;
    po.size = pool_size;
    po.kind = "fastfair";
    auto p = Pool::create_in_memory(po);
    EXPECT_TRUE(p) << p.error().message;
    pool = std::move(p).value();
    IndexOptions io;
    io.words[0] = node_size;
    auto t = FastFairTree::create(*pool, io);
    EXPECT_TRUE(t) << t.error().message;
    tree = std::move(t).value();
  }
  ~FastFairFixture() {
    tree.reset();
    pool.reset();
  }
  //! Drops the handle, copies the pool image, opens the copy (recovery).
  void reopen() {
    tree.reset();
    const std::uint64_t size = pool->size();
    std::byte* copy = static_cast<std::byte*>(std::aligned_alloc(4096, size));
    std::memcpy(copy, pool->base(), size);
    pool.reset();
    image.reset(copy);
    auto p = Pool::attach({copy, size}, "fastfair");
    ASSERT_TRUE(p) << p.error().message;
    pool = std::move(p).value();
    auto t = FastFairTree::open(*pool);
    ASSERT_TRUE(t) << t.error().message;
    tree = std::move(t).value();
  }
  std::optional<Value> get(std::uint64_t k) const { return tree->lookup(as_key(u64_str(k))); }
  Status put(std::uint64_t k, Value v) { return tree->insert(as_key(u64_str(k)), v); }
  Status del(std::uint64_t k) { return tree->remove(as_key(u64_str(k))); }
  std::vector<std::uint64_t> keys() const {
    std::vector<std::uint64_t> out;
    tree->scan(Key{}, SIZE_MAX, [&](Key k, Value) {
      out.push_back(key_u64(k));
      return true;
    });
    return out;
  }
  void expect_verified() const {
    auto r = tree->verify();
    EXPECT_TRUE(r) << r.error().message;
  }

  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> image;  // declared before pool: freed after it
  std::unique_ptr<Pool> pool;
  std::unique_ptr<FastFairTree> tree;
};

}  // namespace wort::test
