// tests/support/tree_fixture.h — one index of type T on a pool in memory, for an index's own
// tests: made in one call, checked (verify and the allocator audit), and reopened from the
// pool's bytes as they are, as after a crash.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "pm/allocator.h"
#include "support/keygen.h"
#include "wort/index.h"
#include "wort/key.h"
#include "wort/pool.h"

namespace wort::test {

//! The key counts of a recovery-time test: max / 100, max / 10 and max, where max is the
//! environment variable `env` if it is set, else 100000.
inline std::vector<std::uint64_t> recovery_key_counts(const char* env) {
  std::uint64_t max = 100000;
  if (const char* s = std::getenv(env)) max = std::strtoull(s, nullptr, 10);
  std::vector<std::uint64_t> out;
  for (std::uint64_t n = max / 100; n <= max; n *= 10) out.push_back(n);
  return out;
}

//! *pool: a pool in memory of `size` bytes for index kind `kind`, in chunks of `chunk`
//! bytes (0: the pool's default). A pool that cannot be made fails the test (fatally).
inline void make_memory_pool(std::unique_ptr<Pool>* pool, std::string_view kind,
                             std::uint64_t size, std::uint64_t chunk = 0) {
  PoolOptions o;
  o.size = size;
  if (chunk != 0) o.chunk_size = chunk;
  o.kind = std::string(kind);
  auto p = Pool::create_in_memory(o);
  ASSERT_TRUE(p) << p.error().message;
  *pool = std::move(p).value();
}

//! *pool as make_memory_pool makes it, and *tree a new T on it (T::create with `io`).
template <class T>
void make_memory_tree(std::unique_ptr<Pool>* pool, std::unique_ptr<T>* tree,
                      const IndexOptions& io, std::uint64_t size, std::uint64_t chunk = 0) {
  ASSERT_NO_FATAL_FAILURE(make_memory_pool(pool, T::kKind, size, chunk));
  auto t = T::create(**pool, io);
  ASSERT_TRUE(t) << t.error().message;
  *tree = std::move(t).value();
}

//! A T on a pool in memory that the test can reopen from its bytes.
//! IndexOptions whose first words are `words` (words[0], words[1], ...), the rest default:
//! an index's node sizes for a test.
inline IndexOptions node_words(std::initializer_list<std::uint64_t> words) {
  IndexOptions o;
  std::size_t i = 0;
  for (std::uint64_t w : words) o.words[i++] = w;
  return o;
}

template <class T>
struct TreeFixture {
  std::shared_ptr<std::byte> image;  //!< backing memory after reopen(); outlives pool
  std::unique_ptr<Pool> pool;
  std::unique_ptr<T> tree;
  double open_ms = 0;  //!< T::open in the last reopen()

  TreeFixture(const IndexOptions& io, std::uint64_t pool_size) {
    make_memory_tree(&pool, &tree, io, pool_size);
  }
  //! Inserts the key u64_str(k) with value k.
  Status ins(std::uint64_t k) { return tree->insert(as_key(u64_str(k)), k); }
  //! Inserts n keys spread over the key space (k * 2654435761 mod 1000000007, k < n).
  void ins_spread(std::uint64_t n) {
    for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(ins(k * 2654435761u % 1000000007u), Status::ok);
  }
  //! How many nodes of `type` the tree's stats count.
  std::uint64_t n(const char* type) { return tree->stats().nodes.at(type); }
  //! verify() and the allocator audit, both clean.
  void check() {
    auto r = tree->verify();
    ASSERT_TRUE(r) << r.error().message;
    auto a = pool->allocator().audit([&](pm::BlockVisitor v) { return tree->visit_blocks(v); });
    ASSERT_TRUE(a.ok()) << a.describe();
  }
  //! Fills the tree with the keys 0..n-1 and checks that dump() names a node of `type`.
  void fill_and_dump(std::uint64_t n, const char* type) {
    for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(ins(k), Status::ok);
    std::ostringstream dump;
    tree->dump(dump);
    EXPECT_NE(dump.str().find(type), std::string::npos);
  }
  //! The pool as the test left it (damaged) does not open: corrupt, with a message.
  void expect_open_refused_as_corrupt() {
    tree.reset();
    auto t = T::open(*pool);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, Status::corrupt);
    EXPECT_FALSE(t.error().message.empty());
  }
  //! As after a crash: the pool's bytes as they are, opened afresh (T::open's recovery).
  void reopen() {
    tree.reset();
    const std::uint64_t size = pool->size();
    std::shared_ptr<std::byte> copy(static_cast<std::byte*>(std::aligned_alloc(64, size)),
                                    std::free);
    std::memcpy(copy.get(), pool->base(), size);
    pool.reset();
    image = copy;  // the previous image (if any) is no longer mapped
    auto p = Pool::attach({image.get(), size}, T::kKind);
    ASSERT_TRUE(p) << p.error().message;
    pool = std::move(*p);
    const auto t0 = std::chrono::steady_clock::now();
    auto t = T::open(*pool);
    open_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(t) << t.error().message;
    tree = std::move(*t);
  }
};

//! For each damage 0..kinds-1: a fresh fixture F filled with 40 keys (dump() naming a node of
//! `type`), `damage(f, i)` writes damage i into its pool, and open refuses the pool as
//! corrupt with a message (never a crash).
template <class F, class Damage>
void expect_each_damage_refused(int kinds, const char* type, Damage damage) {
  for (int i = 0; i < kinds; ++i) {
    SCOPED_TRACE("damage " + std::to_string(i));
    F f;
    ASSERT_NO_FATAL_FAILURE(f.fill_and_dump(40, type));
    damage(f, i);
    f.expect_open_refused_as_corrupt();
  }
}

}  // namespace wort::test
