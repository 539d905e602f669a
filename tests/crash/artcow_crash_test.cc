// Crash-simulator tests of ART+CoW (crashsim::run_kv): every operation path — insert into an
// empty tree, add a child to each node type, grow 4→16→48→256, shrink back, leaf split,
// prefix split (in the header, past it, key ending inside it, one level down), end-of-key
// slot, upsert/update, remove with and without merge, an interrupted split repaired on
// open — each asserting report.correct() and no lint (report.clean()) and printing the crash
// states explored. Plus reopen after a real kill -9 of a process writing to a file pool.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "pm/allocator.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using Tree = artcow::ArtCow;
using crashsim::KvOp;
using Kind = crashsim::KvOp::Kind;

KvOp ins(std::string k, Value v = 1) { return {Kind::insert, std::move(k), v}; }
KvOp ups(std::string k, Value v) { return {Kind::upsert, std::move(k), v}; }
KvOp upd(std::string k, Value v) { return {Kind::update, std::move(k), v}; }
KvOp rem(std::string k) { return {Kind::remove, std::move(k), 0}; }

crashsim::Report run(const std::vector<KvOp>& setup, const std::vector<KvOp>& ops,
                     crashsim::Options o = {}) {
  if (o.pool_size < (4u << 20)) o.pool_size = 4u << 20;
  auto r = crashsim::run_kv<Tree>(setup, ops, o);
  std::cout << "[" << Tree::kKind << " crash] " << r.summary() << "\n";
  return r;
}

#define EXPECT_CLEAN(report)                                    \
  do {                                                          \
    const auto& r_ = (report);                                  \
    EXPECT_TRUE(r_.correct()) << r_.summary();                  \
    EXPECT_TRUE(r_.clean()) << r_.summary();                    \
    EXPECT_GT(r_.images, 0u) << "no crash state was explored";  \
  } while (0)

//! n keys under one node: u64 0x1000 + i*step, so the node branches on the last byte.
std::vector<KvOp> node_with(unsigned n, unsigned step = 1) {
  std::vector<KvOp> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(ins(u64_str(0x1000 + i * step), i));
  return v;
}
std::string child_key(unsigned i, unsigned step = 1) { return u64_str(0x1000 + i * step); }

TEST(Crash, InsertIntoEmptyTree) { EXPECT_CLEAN(run({}, {ins(u64_str(5), 50)})); }

// A new child in a node with room: NODE4 slot word, NODE16 bitmap, NODE48 index byte,
// NODE256 pointer (each the commit store of its node type).
TEST(Crash, AddChildToEachNodeType) {
  for (unsigned n : {2u, 3u, 5u, 10u, 17u, 30u, 49u, 100u}) {
    SCOPED_TRACE("node with " + std::to_string(n) + " children");
    EXPECT_CLEAN(run(node_with(n, 2), {ins(child_key(n, 2), 7), ins(child_key(1, 2) + "x", 8)}));
  }
}

// A full node is copied into the next larger type and the parent's pointer swapped.
TEST(Crash, GrowEachNodeType) {
  for (unsigned n : {4u, 16u, 48u}) {
    SCOPED_TRACE("grow a node of " + std::to_string(n));
    EXPECT_CLEAN(run(node_with(n), {ins(child_key(n), 7)}));
  }
  // grow below the root: the parent's child pointer is the commit
  std::vector<KvOp> setup = node_with(16);
  setup.push_back(ins(u64_str(0x99000000), 1));
  EXPECT_CLEAN(run(setup, {ins(child_key(16), 7)}));
}

// Removal down to a shrink threshold: 16→4 at 3, 48→16 at 12, 256→48 at 37; and removal
// above it (in place).
TEST(Crash, ShrinkEachNodeType) {
  // {children to grow to (reaching the type), children to come back down to}
  for (auto [grow, n] : {std::pair{5u, 4u}, std::pair{17u, 13u}, std::pair{49u, 38u}}) {
    SCOPED_TRACE("shrink a node of " + std::to_string(n) + " grown to " + std::to_string(grow));
    std::vector<KvOp> setup = node_with(grow);
    for (unsigned i = grow; i-- > n;) setup.push_back(rem(child_key(i)));
    EXPECT_CLEAN(run(setup, {rem(child_key(0)), rem(child_key(2))}));
  }
}

// One node taken through every type and back, every step traced: leaf split, adds,
// 4→16→48→256, in-place removes, 256→48→16→4, the final merge and the empty tree.
TEST(Crash, WholeLifeOfOneNode) {
  std::vector<KvOp> up, down;
  for (unsigned i = 0; i < 60; ++i) up.push_back(ins(child_key(i, 3), i));
  for (unsigned i = 0; i < 60; ++i) down.push_back(rem(child_key((i * 7) % 60, 3)));
  crashsim::Options o;
  o.exhaustive_cap = 16;
  o.random_samples = 4;
  EXPECT_CLEAN(run({}, up, o));
  EXPECT_CLEAN(run(up, down, o));
}

TEST(Crash, RemoveInPlaceFromEachNodeType) {
  for (unsigned n : {4u, 10u, 30u, 100u}) {
    SCOPED_TRACE("remove from a node of " + std::to_string(n));
    EXPECT_CLEAN(run(node_with(n), {rem(child_key(1)), rem(u64_str(0x99))}));
  }
}

TEST(Crash, LeafSplit) {
  EXPECT_CLEAN(run({ins(u64_str(0x0123456789abcdefull))}, {ins(u64_str(0x0123456789abcdeeull), 9)}));
  EXPECT_CLEAN(run({ins(u64_str(1))}, {ins(u64_str(1ull << 63), 9)}));
  // one key a proper prefix of the other: the new NODE4's end-of-key slot
  EXPECT_CLEAN(run({ins("prefix-and-more")}, {ins("prefix", 2)}));
  EXPECT_CLEAN(run({ins("pre")}, {ins("prefix", 2)}));
}

// The key leaves a compressed path: inside the header's 4 bytes, beyond them (hybrid), by
// ending inside it, and one level down. ART+CoW copies the old node with its new header
// before swapping the parent's pointer.
TEST(Crash, PrefixSplit) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;  // 7-byte path
  for (unsigned m : {0u, 1u, 3u, 4u, 5u, 6u}) {
    SCOPED_TRACE("mismatch at prefix byte " + std::to_string(m));
    const std::uint64_t k = a ^ (std::uint64_t{0x10} << (56 - 8 * m));
    EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b))}, {ins(u64_str(k), 4)}));
  }
  const std::uint64_t c = 0x1bcdef0123456700ull;
  EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b)), ins(u64_str(c))},
                   {ins(u64_str(a ^ (1ull << 40)), 4)}));
  EXPECT_CLEAN(run({ins("common-prefix-one"), ins("common-prefix-two")}, {ins("common", 5)}));
  EXPECT_CLEAN(run({ins("common-prefix-one"), ins("common-prefix-two")},
                   {ins("commonality", 5), ins("c", 6)}));
}

TEST(Crash, EndOfKeySlot) {
  EXPECT_CLEAN(run({ins("abc"), ins("abd")}, {ins("ab", 7), ups("ab", 8), rem("ab")}));
  EXPECT_CLEAN(run({ins("ab"), ins("abc"), ins("abd")}, {rem("ab"), rem("abc")}));
  EXPECT_CLEAN(run({ins("ab"), ins("abc")}, {rem("abc")}));  // end-of-key leaf survives
  EXPECT_CLEAN(run({ins("ab"), ins("abc")}, {rem("ab")}));   // child leaf survives
}

TEST(Crash, UpsertAndUpdate) {
  const std::vector<KvOp> setup = {ins(u64_str(1)), ins(u64_str(2)), ins("xyz")};
  EXPECT_CLEAN(run(setup, {ups(u64_str(1), 11), upd(u64_str(2), 22), ups("xyz", 33),
                           ups(u64_str(3), 44), upd(u64_str(4), 55), ins(u64_str(1), 9)}));
}

TEST(Crash, RemoveWithoutMerge) {
  EXPECT_CLEAN(run(node_with(3), {rem(child_key(1)), rem(u64_str(0x99))}));
  EXPECT_CLEAN(run({ins(u64_str(7))}, {rem(u64_str(7))}));  // the root leaf
}

// A node left with one entry is replaced by it; a survivor node absorbs the path.
TEST(Crash, RemoveWithMerge) {
  EXPECT_CLEAN(run({ins(u64_str(0x10)), ins(u64_str(0x20))}, {rem(u64_str(0x10))}));
  EXPECT_CLEAN(run({ins(u64_str(0x110000)), ins(u64_str(0x110001)), ins(u64_str(0x220000))},
                   {rem(u64_str(0x220000))}));
  // one level down, with a long merged path (> 4 header bytes)
  EXPECT_CLEAN(run({ins(u64_str(0xf000000000000000ull)), ins(u64_str(0x1100)),
                    ins(u64_str(0x1101)), ins(u64_str(0x2200))},
                   {rem(u64_str(0x2200)), rem(u64_str(0x1101))}));
}

// A split interrupted between the header store and the parent's pointer swap (and a merge
// interrupted the same way) is repaired on open; the continuation ops after each recovery
// pass through the repaired node.
TEST(Crash, RecoveryOfInterruptedSplitAndMerge) {
  const std::uint64_t a = 0xabcdef0123456700ull, b = 0xabcdef0123456711ull;
  std::vector<KvOp> ops = {ins(u64_str(0xab00000000000000ull), 1), ins(u64_str(a + 2), 2),
                           ups(u64_str(a), 3), rem(u64_str(0xab00000000000000ull)),
                           rem(u64_str(b)), ins(u64_str(0xabcdef0000000000ull), 4)};
  crashsim::Options o;
  o.continuation_ops = 12;
  EXPECT_CLEAN(run({ins(u64_str(a)), ins(u64_str(b))}, ops, o));
}

// Larger trees, sampled: a mixed batch of operations over keys of several generators.
TEST(Crash, SampledMixedOperations) {
  for (Gen g : {Gen::random_u64, Gen::shared_prefix, Gen::prefix_chains, Gen::long_keys}) {
    SCOPED_TRACE(std::string(to_string(g)));
    auto keys = make_keys(g, 160, 11);
    std::vector<KvOp> setup, ops;
    for (std::size_t i = 0; i < 120; ++i) setup.push_back(ins(keys[i], i));
    std::mt19937_64 rng(5);
    for (std::size_t i = 0; i < 48; ++i) {
      const std::string& k = keys[rng() % keys.size()];
      switch (rng() % 4) {
        case 0: ops.push_back(ins(k, i)); break;
        case 1: ops.push_back(ups(k, i)); break;
        default: ops.push_back(rem(k)); break;
      }
    }
    crashsim::Options o;
    o.seed = 3;
    o.exhaustive_cap = 16;
    o.random_samples = 4;
    EXPECT_CLEAN(run(setup, ops, o));
  }
}

// --- reopen after a real process kill ----------------------------------------------------

//! Operation j of the child's deterministic stream: upsert (key, j) or remove key.
struct StreamOp {
  std::size_t key;
  bool remove;
};
StreamOp stream_op(std::uint64_t j, std::size_t nkeys) {
  std::mt19937_64 rng(j * 0x9e3779b97f4a7c15ull + 1);
  return {static_cast<std::size_t>(rng() % nkeys), rng() % 4 == 0};
}

//! Child: creates a file pool and applies the stream; after each acknowledged operation it
//! writes the operation's number to the pipe. The parent kills it mid-run.
[[noreturn]] void child_run(const std::string& path, int fd, const std::vector<std::string>& keys) {
  PoolOptions o;
  o.size = 64ull << 20;
  o.kind = std::string(Tree::kKind);
  auto pool = Pool::create(path, o);
  if (!pool) _exit(2);
  auto tree = Tree::create(**pool, {});
  if (!tree) _exit(3);
  for (std::uint64_t j = 0;; ++j) {
    const StreamOp op = stream_op(j, keys.size());
    const Key k = as_key(keys[op.key]);
    const Status s = op.remove ? (*tree)->remove(k) : (*tree)->upsert(k, j);
    if (s != Status::ok && s != Status::not_found) _exit(4);
    if (write(fd, &j, sizeof j) != sizeof j) _exit(5);
  }
}

TEST(Crash, ReopenAfterKill9) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (std::string(Tree::kKind) + "_kill_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "pool").string();
  const auto keys = make_keys(Gen::random_bytes, 5000, 17);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    child_run(path, fds[1], keys);
  }
  close(fds[1]);
  std::uint64_t j = 0, acked = 0;
  while (acked < 20000 && read(fds[0], &j, sizeof j) == sizeof j) acked = j + 1;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(fds[0], &j, sizeof j) == sizeof j) acked = j + 1;  // acks still in the pipe
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own, status " << status;
  ASSERT_GE(acked, 20000u) << "child stopped early";
  std::cout << "[" << Tree::kKind << " crash] killed the child after " << acked
            << " acknowledged operations\n";

  // The expected contents after the acknowledged prefix; the in-flight op's key may go
  // either way.
  std::map<std::size_t, Value> expect;
  for (std::uint64_t i = 0; i < acked; ++i) {
    const StreamOp op = stream_op(i, keys.size());
    if (op.remove) expect.erase(op.key);
    else expect[op.key] = i;
  }
  const std::size_t in_flight = stream_op(acked, keys.size()).key;

  auto pool = Pool::open(path, Tree::kKind);
  ASSERT_TRUE(pool) << pool.error().message;
  auto tree = Tree::open(**pool);
  ASSERT_TRUE(tree) << tree.error().message;
  std::size_t checked = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k == in_flight) continue;
    const auto it = expect.find(k);
    const auto want = it == expect.end() ? std::nullopt : std::optional<Value>(it->second);
    EXPECT_EQ((*tree)->lookup(as_key(keys[k])), want) << "key " << k;
    ++checked;
  }
  EXPECT_EQ(checked, keys.size() - 1);
  const auto v = (*tree)->verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  auto audit = (*pool)->allocator().audit([&](pm::BlockVisitor bv) { (*tree)->visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  EXPECT_EQ((*tree)->insert(as_key(std::string("after-the-crash")), 1), Status::ok);
  EXPECT_TRUE((*tree)->verify().ok());
  tree->reset();
  pool->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wort::test
