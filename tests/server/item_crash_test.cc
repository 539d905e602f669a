// tests/server/item_crash_test.cc — the crash simulator (src/crashsim) on the server's item
// commit path, in process: a set of a new key and an overwrite of a present one, with the
// item written by store::write_block (the value-block layer Store::make_item uses: pm::copy +
// pm::flush, no fence), committed by the index's upsert in a values_are_blocks pool (which
// fences first) and the replaced block freed after the commit returned — as Store::commit
// does. Every crash image must show the old item or the new one, whole; zero findings and
// zero lints; also with the pool's blocks above 2^32. The broken variant (write_block
// without its pm::flush) must be caught.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "index/fastfair/fastfair_tree.h"
#include "index/fptree/fptree_tree.h"
#include "index/nvtree/nvtree_tree.h"
#include "index/roart/roart_tree.h"
#include "index/wbtree/wbtree_tree.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "server/item_layout.h"
#include "store/value_block.h"
#include "support/crash_ops.h"

namespace wort::test {
namespace {

using crashsim::KvOp;
using server::ItemHeader;

constexpr std::size_t kValueBytes = 96;  // header + key + value span two or three lines
constexpr Value kTorn = 0xdeadbeefdeadbeefull;  // what lookup answers for a torn item

//! The value bytes an item for test value v carries: v, then a pattern derived from v.
std::string item_value_of(Value v) {
  std::string s(kValueBytes, '\0');
  std::memcpy(s.data(), &v, sizeof v);
  for (std::size_t i = sizeof v; i < s.size(); ++i) s[i] = static_cast<char>(v * 31 + i);
  return s;
}

//! An index whose values are server items: the test value v is stored as the item
//! key -> item_value_of(v); lookup reads the item back and answers kTorn unless it is
//! whole (store::check_block: magic, length, key, checksum; and every value byte).
template <class Inner, store::WriteBack WB>
class ItemIndex {
 public:
  static constexpr std::string_view kKind = Inner::kKind;
  static constexpr std::size_t kMaxKeySize = Inner::kMaxKeySize;
  static constexpr bool kConcurrent = [] {
    if constexpr (requires { Inner::kConcurrent; }) return bool(Inner::kConcurrent);
    else return false;
  }();

  static Result<std::unique_ptr<ItemIndex>> create(Pool& pool, const IndexOptions& o) {
    auto in = Inner::create(pool, o);
    if (!in) return in.error();
    return std::unique_ptr<ItemIndex>(new ItemIndex(pool, std::move(in).value()));
  }
  static Result<std::unique_ptr<ItemIndex>> open(Pool& pool) {
    auto in = Inner::open(pool);  // recovery: the trace keeps every block a value names
    if (!in) return in.error();
    return std::unique_ptr<ItemIndex>(new ItemIndex(pool, std::move(in).value()));
  }

  Status insert(Key k, Value v) {
    if (inner_->lookup(k)) return Status::exists;
    return set(k, v);
  }
  Status upsert(Key k, Value v) { return set(k, v); }
  Status update(Key k, Value v) {
    if (!inner_->lookup(k)) return Status::not_found;
    return set(k, v);
  }
  std::optional<Value> lookup(Key k) const {
    const auto off = inner_->lookup(k);
    if (!off) return std::nullopt;
    return decode(k, *off);
  }
  Status remove(Key k) {
    const auto off = inner_->lookup(k);
    if (!off) return Status::not_found;
    const Status s = inner_->remove(k);
    if (s == Status::ok) pool_.allocator().free(*off);  // unlinked durably
    return s;
  }
  std::size_t scan(Key from, std::size_t n, Visitor vis) const {
    return inner_->scan(from, n, [&](Key k, Value off) { return vis(k, decode(k, off)); });
  }
  std::size_t range(Key lo, Key hi, Visitor vis) const {
    return inner_->range(lo, hi, [&](Key k, Value off) { return vis(k, decode(k, off)); });
  }
  IndexStats stats() const { return inner_->stats(); }
  Result<void> verify() const { return inner_->verify(); }
  void dump(std::ostream& os) const { inner_->dump(os); }
  //! The index's blocks and every item block (what Store::audit walks).
  Result<void> visit_blocks(BlockVisitorFn bv) const {
    if (auto r = inner_->visit_blocks(bv); !r) return r;
    inner_->scan(Key{}, SIZE_MAX, [&](Key, Value off) {
      bv(off);
      return true;
    });
    return {};
  }

 private:
  ItemIndex(Pool& p, std::unique_ptr<Inner> in) : pool_(p), inner_(std::move(in)) {}

  //! Store::store's set: build the item in a fresh block, commit key -> block through the
  //! index, free the replaced block after the commit returned.
  Status set(Key k, Value v) {
    const std::string_view key = as_string(k);
    const std::string value = item_value_of(v);
    std::uint64_t off = 0;
    if (Status s = pool_.allocator().allocate(server::item_bytes(key.size(), value.size()), &off);
        s != Status::ok)
      return s;
    store::write_block(pool_.at<char>(off),
                       server::item_header(server::ItemFields{v, 0, 7, 0}, key.size(), value.size()),
                       key, value, {}, WB);
    const auto old = inner_->lookup(k);
    const Status s = inner_->upsert(k, off);
    if (s != Status::ok) {
      pool_.allocator().free(off);
      return s;
    }
    if (old) pool_.allocator().free(*old);
    return Status::ok;
  }
  Value decode(Key k, std::uint64_t off) const {
    const ItemHeader* h = nullptr;
    if (store::check_block(pool_, off, as_string(k), kValueBytes, &h) != store::BlockCheck::ok ||
        h->value_len != kValueBytes)
      return kTorn;
    Value v = 0;
    std::memcpy(&v, server::item_value(h), sizeof v);
    if (h->cas != v || h->flags != 7 ||
        std::memcmp(server::item_value(h), item_value_of(v).data(), kValueBytes) != 0)
      return kTorn;
    return v;
  }

  Pool& pool_;
  std::unique_ptr<Inner> inner_;
};

template <class Inner, store::WriteBack WB = store::WriteBack::flush>
crashsim::Report run_items(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops) {
  crashsim::Options o;
  o.values_are_blocks = true;
  return run_and_print(crashsim::factory_of<ItemIndex<Inner, WB>>(), setup, ops, o);
}

// A set of a new key, then an overwrite of it and of a key present before; then a delete.
const std::vector<KvOp> kSetup = {ins("user:0000000000000001", 1), ins("user:0000000000000002", 2)};
const std::vector<KvOp> kOps = {ups("user:0000000000000003", 3), ups("user:0000000000000003", 4),
                                ups("user:0000000000000001", 5), rem("user:0000000000000002")};

TEST(ServeItemCrash, SetNewKeyAndOverwriteWort) { EXPECT_CLEAN(run_items<WortTree>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteWoart) { EXPECT_CLEAN(run_items<woart::Woart>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteArtCow) { EXPECT_CLEAN(run_items<artcow::ArtCow>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteFastFair) { EXPECT_CLEAN(run_items<FastFairTree>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteFPTree) { EXPECT_CLEAN(run_items<FPTree>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteWbTree) { EXPECT_CLEAN(run_items<WbTree>(kSetup, kOps)); }
TEST(ServeItemCrash, SetNewKeyAndOverwriteNvTree) { EXPECT_CLEAN(run_items<NvTree>(kSetup, kOps)); }

// ROART commits an overwritten value non-temporally; in a values_are_blocks pool with
// pm::publish_nt (a fence first), so the item's write-back is ordered before the index names
// it (before, with a bare commit_nt, this run found MISSING_FENCE and NOT_ATOMIC images).
TEST(ServeItemCrash, SetNewKeyAndOverwriteRoart) { EXPECT_CLEAN(run_items<roart::Roart>(kSetup, kOps)); }

// The same sets, overwrites and delete with every block above 2^32, and with the blocks of
// each commit that swaps one for another (a value word: one item for the next; a node for
// its copy) on either side of it (run_above_4gib): a commit word split into two 4-byte stores
// shows torn there.
template <class Inner>
void expect_items_clean_above_4gib() {
  crashsim::Options o;
  o.values_are_blocks = true;
  expect_clean_above_4gib(crashsim::factory_of<ItemIndex<Inner, store::WriteBack::flush>>(),
                          kSetup, kOps, o);
}

TEST(ServeItemCrash, SetNewKeyAndOverwriteAboveFourGiB) {
  expect_items_clean_above_4gib<WortTree>();
  expect_items_clean_above_4gib<woart::Woart>();
  expect_items_clean_above_4gib<artcow::ArtCow>();
  expect_items_clean_above_4gib<FastFairTree>();
  expect_items_clean_above_4gib<FPTree>();
  expect_items_clean_above_4gib<WbTree>();
  expect_items_clean_above_4gib<NvTree>();
  expect_items_clean_above_4gib<roart::Roart>();
}

// The test can fail: without the item's pm::flush the index's fence orders nothing, the
// item lines are still dirty at the acknowledgement, and a crash loses the item.
TEST(ServeItemCrash, MissingItemFlushIsCaught) {
  const auto r = run_items<WortTree, store::WriteBack::omit_for_crash_test>(kSetup, kOps);
  EXPECT_FALSE(r.correct());
  EXPECT_TRUE(r.has("MISSING_FLUSH")) << r.summary();
  EXPECT_TRUE(r.has("LOST_ACK")) << r.summary();
}

}  // namespace
}  // namespace wort::test
