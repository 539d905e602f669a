// The index handle's contract with its Pool, for every registered kind: one handle per Pool
// (while a handle from Index::create or Index::open lives, a second Index::open or create on
// the same Pool fails with invalid_argument and changes nothing: two handles would keep
// different DRAM state of one tree); the handle keeps its Pool alive when the Pool's owner
// lets go first; a key one byte over the kind's limit is refused; a volatile kind is
// refused in a file pool.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "index/kit/kit_support.h"

namespace wort {
namespace {

using kittest::key_of;

class OneHandle : public ::testing::TestWithParam<std::string> {
 protected:
  //! The options of every pool here: 8 MiB holding the test's kind.
  PoolOptions options() const {
    PoolOptions o;
    o.size = 8u << 20;
    o.kind = GetParam();
    return o;
  }
  //! A file pool of the test's kind (kind_), at path_ (a file named after `name`).
  void create_file_pool(const std::string& name) {
    kind_ = GetParam();
    path_.emplace(kind_ + "-" + name);
    auto pool = Pool::create(path_->str(), options());
    ASSERT_TRUE(pool) << pool.error().message;
    pool_ = std::move(*pool);
  }

  std::string kind_;
  std::optional<kittest::TempPath> path_;
  std::unique_ptr<Pool> pool_;
};

TEST_P(OneHandle, ASecondOpenOfTheSamePoolIsRefusedUntilTheFirstHandleIsGone) {
  ASSERT_NO_FATAL_FAILURE(create_file_pool("onehandle"));
  Pool& pool = *pool_;
  {
    auto a = Index::create(pool, kind_);
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_EQ((*a)->insert(key_of("k1"), 1), Status::ok);
    auto b = Index::open(pool);
    ASSERT_FALSE(b) << "a second handle opened beside the first";
    EXPECT_EQ(b.error().code, Status::invalid_argument) << b.error().message;
    // The first handle is unharmed and still the only one.
    ASSERT_EQ((*a)->insert(key_of("k2"), 2), Status::ok);
    EXPECT_EQ((*a)->lookup(key_of("k1")), std::optional<Value>(1));
    EXPECT_FALSE(Index::open(pool));
  }
  for (int round = 0; round < 2; ++round) {  // the handle gone: open works, once at a time
    auto c = Index::open(pool);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ((*c)->lookup(key_of("k2")), std::optional<Value>(2));
    EXPECT_FALSE(Index::open(pool));
  }
  // Another Pool object is another claim (a second pool file, or the same file reopened
  // after this one closes): only one handle per Pool object is enforced here; the file
  // lock keeps a second Pool of the same file out.
}

// Deleting the Pool before its index handle used to unmap the memory under the handle (the
// next operation died of SIGSEGV). Now the handle keeps the pool open: it goes on working,
// and the pool closes (clean shutdown, lock released) when the handle goes.
TEST_P(OneHandle, TheHandleKeepsItsPoolOpenWhenThePoolIsDeletedFirst) {
  ASSERT_NO_FATAL_FAILURE(create_file_pool("outlive"));
  auto index = Index::create(*pool_, kind_);
  ASSERT_TRUE(index) << index.error().message;
  ASSERT_EQ((*index)->insert(key_of("before"), 1), Status::ok);
  pool_.reset();  // the owner lets go first
  ASSERT_EQ((*index)->insert(key_of("after"), 2), Status::ok);
  EXPECT_EQ((*index)->lookup(key_of("before")), std::optional<Value>(1));
  EXPECT_TRUE((*index)->verify()) << (*index)->verify().error().message;
  EXPECT_EQ(Pool::open(path_->str()).status(), Status::in_use) << "closed while the handle lives";
  index->reset();  // now the pool closes
  auto again = Pool::open(path_->str(), kind_);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE((*again)->was_clean_shutdown());
  auto reopened = Index::open(**again);
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ((*reopened)->lookup(key_of("after")), std::optional<Value>(2));
}

// Every kind says how long a key may be, the registry and the handle agree, the limit is at
// least kMaxKeyLength, a key of the limit is stored and one byte over is refused.
TEST_P(OneHandle, AKeyOneByteOverTheKindsLimitIsRefused) {
  const std::string kind = GetParam();
  const registry::Entry* e = registry::find(kind);
  ASSERT_NE(e, nullptr);
  auto pool = Pool::create_in_memory(options());
  ASSERT_TRUE(pool) << pool.error().message;
  auto index = Index::create(**pool, kind);
  ASSERT_TRUE(index) << index.error().message;
  Index& ix = **index;
  EXPECT_EQ(ix.max_key_size(), e->max_key_size);
  EXPECT_GE(ix.max_key_size(), kMaxKeyLength);
  const std::string longest(ix.max_key_size(), 'k');
  const std::string over(ix.max_key_size() + 1, 'k');
  EXPECT_EQ(ix.insert(key_of(longest), 1), Status::ok);
  EXPECT_EQ(ix.lookup(key_of(longest)), std::optional<Value>(1));
  EXPECT_EQ(ix.insert(key_of(over), 2), Status::invalid_argument);
  EXPECT_EQ(ix.upsert(key_of(over), 2), Status::invalid_argument);
  EXPECT_NE(ix.update(key_of(over), 2), Status::ok);
  EXPECT_EQ(ix.lookup(key_of(over)), std::nullopt);
  EXPECT_NE(ix.remove(key_of(over)), Status::ok);
  EXPECT_TRUE(ix.verify()) << ix.verify().error().message;
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, OneHandle,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

// A volatile kind keeps nothing in the pool: in a file pool its data would be gone at the
// next open (which answered corrupt, while `wort check` called the pool OK). Index::create
// refuses it there, saying why; in an in-memory pool it runs.
TEST(VolatileKind, IsRefusedInAFilePoolAndRunsInMemory) {
  for (const registry::Entry* e : registry::all()) {
    if (e->persistent) continue;
    kittest::TempPath path(e->name + "-volatile");
    PoolOptions o;
    o.size = 4u << 20;
    o.kind = e->name;
    auto file = Pool::create(path.str(), o);
    ASSERT_TRUE(file) << file.error().message;
    auto refused = Index::create(**file, e->name);
    ASSERT_FALSE(refused) << e->name << " was created in a file pool";
    EXPECT_EQ(refused.error().code, Status::invalid_argument);
    EXPECT_NE(refused.error().message.find("volatile"), std::string::npos)
        << refused.error().message;
    auto mem = Pool::create_in_memory(o);
    ASSERT_TRUE(mem) << mem.error().message;
    auto index = Index::create(**mem, e->name);
    ASSERT_TRUE(index) << index.error().message;
    EXPECT_EQ((*index)->insert(key_of("k"), 1), Status::ok);
    const std::string over((*index)->max_key_size() + 1, 'k');
    EXPECT_EQ((*index)->insert(key_of(over), 2), Status::invalid_argument);
  }
}

}  // namespace
}  // namespace wort
