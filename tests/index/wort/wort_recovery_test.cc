// RecoverHeader: the states an interrupted SplitCmp or remove-merge leaves behind, built
// directly, must read correctly before any repair (lookup, scan, verify) and be repaired by
// the next writer that passes the node.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "pm/persist.h"
#include "support/keygen.h"
#include "support/tree_fixture.h"

namespace wort::test {
namespace {

using namespace wort_index;

class WortRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (kSpanBits != 4) GTEST_SKIP() << "the states below are drawn for 4-bit spans";
    make_memory_tree(&pool_, &tree_, {}, 8u << 20, 64u << 10);
  }

  void put(std::uint64_t k) {
    ASSERT_EQ(tree_->insert(Key(u64_key(k)), k), Status::ok);
    ref_[u64_str(k)] = k;
  }
  Anchor* anchor() { return pool_->at<Anchor>(pool_->root()); }
  Node* node(std::uint64_t word) { return pool_->at<Node>(word); }

  //! Everything a reader sees agrees with ref_ (lookups of present and absent keys, a full
  //! scan, scans from every key) and verify() passes.
  void expect_reads_correct(const std::vector<std::uint64_t>& absent) {
    for (const auto& [k, v] : ref_) EXPECT_EQ(tree_->lookup(as_key(k)), std::optional<Value>(v));
    for (std::uint64_t a : absent) EXPECT_FALSE(tree_->lookup(Key(u64_key(a))).has_value());
    std::vector<std::string> got;
    tree_->scan(Key{}, 100, [&](Key k, Value) {
      got.emplace_back(as_string(k));
      return true;
    });
    std::vector<std::string> want;
    for (const auto& kv : ref_) want.push_back(kv.first);
    EXPECT_EQ(got, want);
    for (const auto& [k, v] : ref_) {
      std::size_t n = tree_->scan(as_key(k), 100, [](Key, Value) { return true; });
      EXPECT_EQ(n, static_cast<std::size_t>(std::distance(ref_.find(k), ref_.end())));
    }
    auto r = tree_->verify();
    EXPECT_TRUE(r) << r.error().message;
    EXPECT_EQ(tree_->stats().keys, ref_.size());
  }

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<WortTree> tree_;
  std::map<std::string, Value> ref_;
};

constexpr std::uint64_t kA = 0xabcdef0123456700ull, kB = 0xabcdef0123456711ull;

// SplitCmp wrote the node's shortened header (depth 3, prefix from position 3) and crashed
// before the parent's pointer to the new parent node.
TEST_F(WortRecovery, InterruptedSplitReadsCorrectlyThenIsRepairedByAWriter) {
  put(kA);
  put(kB);
  Node* root = node(anchor()->root);
  const std::uint64_t before = root->header;
  ASSERT_EQ(decode_header(before).depth, 0u);
  ASSERT_EQ(decode_header(before).prefix_len, 14u);
  const auto a = u64_key(kA);
  pm::store(&root->header, make_header(3, 11, Key(a)));
  // 0xa0... differs from the keys at position 1, which the stale header no longer checks
  expect_reads_correct({0xa0cdef0123456700ull, 0xabcdef0123456712ull, 0xabcdef01234567ull});
  EXPECT_EQ(tree_->headers_repaired(), 0u);
  put(0xab00000000000000ull);  // passes the node: repairs it, then splits it for real
  EXPECT_EQ(tree_->headers_repaired(), 1u);
  expect_reads_correct({0xa0cdef0123456700ull});
  EXPECT_EQ(decode_header(root->header).depth, 3u);  // after the real split at position 2
}

// The remove-merge wrote the survivor's header (depth of the removed node) but crashed
// before the parent slot: the survivor is reached deeper than its header says.
TEST_F(WortRecovery, MergeHeaderWithoutCommitReadsCorrectly) {
  for (std::uint64_t k : {0x1100ull, 0x1101ull, 0x2200ull}) put(k);
  Node* root = node(anchor()->root);
  const std::uint64_t c_word = root->child[1];  // partial key at position 12 is 1
  ASSERT_FALSE(is_leaf(c_word));
  Node* c = node(c_word);
  ASSERT_EQ(decode_header(c->header).depth, 13u);
  const auto k = u64_key(0x1100);
  pm::store(&c->header, make_header(0, 15, Key(k)));
  expect_reads_correct({0x1000ull, 0x1102ull, 0x3100ull});
  put(0x1102);  // passes c: repair back to depth 13
  EXPECT_EQ(tree_->headers_repaired(), 1u);
  EXPECT_EQ(decode_header(c->header).depth, 13u);
  expect_reads_correct({0x1000ull});
}

// The remove-merge's parent slot reached PM but the survivor's header did not: the survivor
// hangs from the anchor with its old header (depth 13).
TEST_F(WortRecovery, MergeCommitWithoutHeaderReadsCorrectly) {
  for (std::uint64_t k : {0x1100ull, 0x1101ull, 0x2200ull}) put(k);
  Node* root = node(anchor()->root);
  const std::uint64_t c_word = root->child[1];
  pm::store(&anchor()->root, c_word);  // as if remove(0x2200) committed without the header
  ref_.erase(u64_str(0x2200));
  expect_reads_correct({0x2200ull, 0x1000ull, 0xff00000000001100ull});
  ASSERT_EQ(tree_->remove(Key(u64_key(0x1101))), Status::ok);  // repairs, then merges
  ref_.erase(u64_str(0x1101));
  EXPECT_EQ(tree_->headers_repaired(), 1u);
  expect_reads_correct({0x1101ull});
}

// Header word packing: every field round-trips at its limits.
// The anchor's partial-key width: the other build's width (4 <-> 8) is a usage error
// (invalid_argument), any other value a damaged anchor (corrupt: `wort check` exits 1). One
// flipped bit of 4 opened as invalid_argument once (an audit's find).
TEST_F(WortRecovery, AnAnchorWidthNoBuildWritesIsCorrupt) {
  put(kA);
  tree_.reset();
  const std::uint64_t mine = anchor()->span_bits;
  for (std::uint64_t bits : std::initializer_list<std::uint64_t>{
           mine ^ 1, mine ^ 2, mine ^ 16, mine ^ (std::uint64_t{1} << 40), 12 - mine}) {
    pm::store(&anchor()->span_bits, bits);
    auto t = WortTree::open(*pool_);
    ASSERT_FALSE(t) << bits;
    EXPECT_EQ(t.error().code, bits == 12 - mine ? Status::invalid_argument : Status::corrupt)
        << bits << ": " << t.error().message;
  }
  pm::store(&anchor()->span_bits, mine);
  auto t = WortTree::open(*pool_);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ((*t)->lookup(Key(u64_key(kA))), std::optional<Value>(kA));
}

TEST(WortLayout, HeaderFieldsRoundTrip) {
  std::string key(kMaxKeyLength, '\0');
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 37 + 11);
  const Key k = as_key(key);
  const std::uint32_t last = static_cast<std::uint32_t>(Partial::count(k));
  for (std::uint32_t depth : {0u, 1u, 17u, last - 20, last}) {
    for (std::uint32_t len : {0u, 1u, kPrefixSlots - 1, kPrefixSlots, kPrefixSlots + 1, 20u}) {
      if (depth + len > last) continue;
      const HeaderFields h = decode_header(make_header(depth, len, k));
      EXPECT_EQ(h.depth, depth);
      EXPECT_EQ(h.prefix_len, len);
      EXPECT_EQ(h.branch(), depth + len);
      for (std::uint32_t i = 0; i < h.stored(); ++i)
        EXPECT_EQ(h.prefix_at(i), Partial::at(k, depth + i)) << depth << " " << len << " " << i;
    }
  }
}

TEST(WortKey, PartialsAndMismatch) {
  using P4 = radix::Partials<4>;
  using P8 = radix::Partials<8>;
  const std::string a("\x12\x34\x00\xff", 4), b("\x12\x35\x00\xff", 4), c("\x12\x34", 2);
  EXPECT_EQ(P4::count(as_key(a)), 8u);
  EXPECT_EQ(P4::at(as_key(a), 0), 1u);
  EXPECT_EQ(P4::at(as_key(a), 3), 4u);
  EXPECT_EQ(P4::at(as_key(a), 7), 15u);
  EXPECT_EQ(P4::mismatch(as_key(a), as_key(b), 0), 3u);
  EXPECT_EQ(P4::mismatch(as_key(a), as_key(b), 3), 3u);
  EXPECT_EQ(P4::mismatch(as_key(a), as_key(c), 1), 4u);  // c ends
  EXPECT_EQ(P4::mismatch(as_key(a), as_key(a), 0), 8u);
  EXPECT_EQ(P8::mismatch(as_key(a), as_key(b), 0), 1u);
  // long keys: the 8-byte stride and the tail
  std::string x(1000, 'q'), y = x;
  y[997] = 'r';
  EXPECT_EQ(P4::mismatch(as_key(x), as_key(y), 5), 2u * 997 + 1);  // 'q'=0x71, 'r'=0x72
  EXPECT_EQ(P8::mismatch(as_key(x), as_key(y), 0), 997u);
}

}  // namespace
}  // namespace wort::test
