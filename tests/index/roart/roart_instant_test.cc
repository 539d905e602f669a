// Instant restart of ROART across a kill -9 (paper 001 §3.4.2): a process killed
// while its background trace is held loses no acknowledged operation, and the time to the
// first answered lookup after a kill -9 against the time to full reclamation
// (MeasureTimeToFirstLookup; key counts from WORT_RESTART_KEYS). Forks, so it is not a
// *_concurrency_test (the TSan build): the threaded tests are in
// roart_instant_concurrency_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/roart/roart_tree.h"
#include "pm/allocator.h"
#include "index/roart/roart_instant_support.h"
#include "support/keygen.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

using namespace roart_instant;

using roart::Roart;
namespace fs = std::filesystem;

//! A child process with a pipe to its parent: fork()'s result (-1 if the pipe or the fork
//! failed); the child keeps the writing end fds[1], the parent the reading end fds[0].
pid_t fork_with_pipe(int fds[2]) {
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) close(fds[0]);
  return pid;
}

//! The scenario below; returns whether everything checked out (for the broken variant).
// kill -9 while the background trace runs: a child opens instantly with the trace held,
// applies upserts/removes (acknowledging each through a pipe, with whether the trace had
// finished), and is killed; the parent reopens, and every acknowledged operation is there,
// the trace then completes, and the audit finds no leak.
TEST(RoartInstantRestartAfterKill9, Kill9DuringTheBackgroundTraceLosesNothing) {
  TempDir d("kill");
  const auto keys = make_keys(Gen::random_bytes, 20000, 6);
  build(d.pool(), keys, 10000, 24);
  auto op_of = [&](std::uint64_t j) {
    std::mt19937_64 rng(j * 0x9e3779b97f4a7c15ull + 1);
    const std::size_t k = rng() % keys.size();
    return std::pair{k, rng() % 4 == 0};  // (key, remove?)
  };
  int fds[2];
  const pid_t pid = fork_with_pipe(fds);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto pool = Pool::open(d.pool(), Roart::kKind);
    if (!pool) _exit(2);
    static std::atomic<bool> hold{true};  // never released: killed mid-trace
    auto t = Roart::open_instant(**pool, &hold);
    if (!t) _exit(3);
    for (std::uint64_t j = 0;; ++j) {
      auto [k, rm] = op_of(j);
      const Status s = rm ? (*t)->remove(as_key(keys[k])) : (*t)->upsert(as_key(keys[k]), j);
      if (s != Status::ok && !(rm && s == Status::not_found)) _exit(4);
      const std::uint64_t msg[2] = {j, (*t)->trace_done() ? 1u : 0u};
      if (write(fds[1], msg, sizeof msg) != sizeof msg) _exit(5);
    }
  }
  close(fds[1]);
  std::uint64_t msg[2], acked = 0, done_seen = 0;
  while (acked < 15000 && read(fds[0], msg, sizeof msg) == sizeof msg) {
    acked = msg[0] + 1;
    done_seen += msg[1];
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(fds[0], msg, sizeof msg) == sizeof msg) {
    acked = msg[0] + 1;
    done_seen += msg[1];
  }
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  ASSERT_GE(acked, 15000u);
  EXPECT_EQ(done_seen, 0u) << "the trace finished before the kill";
  std::map<std::size_t, Value> ref;
  for (std::size_t i = 0; i < 10000; ++i) ref[i] = i;
  for (std::uint64_t j = 0; j < acked; ++j) {
    auto [k, rm] = op_of(j);
    if (rm) ref.erase(k);
    else ref[k] = j;
  }
  const std::size_t in_flight = op_of(acked).first;
  auto pool = Pool::open(d.pool(), Roart::kKind);
  ASSERT_TRUE(pool) << pool.error().message;
  auto t = Roart::open_instant(**pool);
  ASSERT_TRUE(t) << t.error().message;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k == in_flight) continue;
    const auto it = ref.find(k);
    EXPECT_EQ((*t)->lookup(as_key(keys[k])),
              it == ref.end() ? std::nullopt : std::optional<Value>(it->second))
        << k;
  }
  ASSERT_TRUE((*t)->wait_trace().ok());
  const auto a = audit(**pool, **t);
  EXPECT_TRUE(a.ok()) << a.describe();
  EXPECT_TRUE((*t)->verify().ok());
  std::printf("[roart instant] killed after %llu acknowledged operations during the trace\n",
              static_cast<unsigned long long>(acked));
}

// Time to the first answered lookup after a kill -9 (a checked one), to the first answered
// write (it waits for the checked walk), and to full reclamation (the background trace's
// end), against the key count; the synchronous open() on a copy of the same image for
// comparison. Key counts: WORT_RESTART_KEYS (default 100000), e.g.
//   WORT_RESTART_KEYS=100000,1000000,4000000 ./build/unit_roart_instant_test
//     --gtest_filter='*MeasureTimeToFirstLookup*' (one line)
TEST(RoartInstantRestartAfterKill9, MeasureTimeToFirstLookup) {
  std::vector<std::size_t> counts;
  const char* env = std::getenv("WORT_RESTART_KEYS");
  for (std::string s = env ? env : "100000"; !s.empty();) {
    const auto c = s.find(',');
    counts.push_back(std::stoull(s.substr(0, c)));
    s = c == std::string::npos ? "" : s.substr(c + 1);
  }
  using clk = std::chrono::steady_clock;
  auto ms = [](clk::duration x) { return std::chrono::duration<double, std::milli>(x).count(); };
  std::printf("[roart instant] keys | instant: open+first lookup ms | first write ms | "
              "trace done ms | synchronous open+first lookup ms\n");
  for (std::size_t n : counts) {
    TempDir d("measure" + std::to_string(n));
    const auto keys = make_keys(Gen::random_u64, n, 9);
    const std::uint64_t size = std::max<std::uint64_t>(64ull << 20, n * 160);
    // a child builds the tree, keeps upserting, and is killed -9
    int fds[2];
    const pid_t pid = fork_with_pipe(fds);
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      PoolOptions o;
      o.size = size;
      o.kind = std::string(Roart::kKind);
      auto pool = Pool::create(d.pool(), o);
      if (!pool) _exit(2);
      auto t = Roart::create(**pool, IndexOptions{});
      if (!t) _exit(3);
      for (std::size_t i = 0; i < n; ++i)
        if ((*t)->insert(as_key(keys[i]), i) != Status::ok) _exit(4);
      const char one = 1;
      if (write(fds[1], &one, 1) != 1) _exit(5);
      for (std::uint64_t j = 0;; ++j) (void)(*t)->upsert(as_key(keys[j % n]), j);
    }
    close(fds[1]);
    char c = 0;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status));
    fs::copy_file(d.pool(), d.dir / "copy");
    const std::string probe = keys[n / 2];
    // instant
    const auto t0 = clk::now();
    auto pool = Pool::open(d.pool(), Roart::kKind);
    ASSERT_TRUE(pool);
    const auto t_pool = clk::now();
    auto t = Roart::open_instant(**pool);
    ASSERT_TRUE(t);
    const auto t_open = clk::now();
    const auto v = (*t)->lookup(as_key(probe));  // a checked lookup: the walk runs meanwhile
    ASSERT_TRUE(v.has_value());
    const auto t_first = clk::now();
    ASSERT_EQ((*t)->upsert(as_key(probe), *v), Status::ok);  // waits for the checked walk
    const auto t_write = clk::now();
    ASSERT_TRUE((*t)->wait_trace().ok());
    const auto t_done = clk::now();
    EXPECT_TRUE(audit(**pool, **t).ok());
    // synchronous, on the copy
    const auto s0 = clk::now();
    auto pool2 = Pool::open((d.dir / "copy").string(), Roart::kKind);
    ASSERT_TRUE(pool2);
    auto t2 = Roart::open(**pool2);
    ASSERT_TRUE(t2);
    ASSERT_TRUE((*t2)->lookup(as_key(probe)).has_value());
    const auto s_first = clk::now();
    std::printf("[roart instant] %zu | %.2f (Pool::open %.2f, open_instant %.2f, lookup %.2f) | "
                "%.1f | %.1f | %.1f\n", n, ms(t_first - t0), ms(t_pool - t0), ms(t_open - t_pool),
                ms(t_first - t_open), ms(t_write - t0), ms(t_done - t0), ms(s_first - s0));
  }
}


// --- Damage met by requests while the checked walk has not passed (g_hold_instant_check
// keeps it from starting): open_instant returns, readers check each word they follow and
// answer nothing where the damage is, writers wait for the walk and answer corrupt once it
// refuses the pool, and from then on every request does.

//! Holds open_instant's checked walk while in scope (released on any exit of the test).
struct HoldWalk {
  HoldWalk() { roart::g_hold_instant_check.store(true); }
  void release() { roart::g_hold_instant_check.store(false); }
  ~HoldWalk() { release(); }
};

//! A pool of 3000 random 8-byte keys (value i), opened (not yet recovered); its root node.
struct Built {
  TempDir d;
  std::vector<std::string> keys;
  std::unique_ptr<Pool> pool;
  explicit Built(const std::string& name) : d(name) {
    keys = make_keys(Gen::random_u64, 3000, 5);
    build(d.pool(), keys, keys.size(), 0, 8ull << 20);
    auto p = Pool::open(d.pool(), Roart::kKind);
    EXPECT_TRUE(p) << p.error().message;
    if (p) pool = std::move(*p);
  }
  roart::NodeBase* root() const {
    const roart::Ref r = pool->at<roart::Anchor>(pool->root())->root.get();
    EXPECT_TRUE(roart::is_node(r));
    return pool->at<roart::NodeBase>(roart::ref_offset(r));
  }
  std::uint8_t first(std::size_t i) const { return static_cast<std::uint8_t>(keys[i][0]); }
};

//! Keys reported by a full scan, checked ascending.
std::size_t scan_all(const Roart& t) {
  std::string prev;
  bool first = true, ascending = true;
  const std::size_t n = t.scan(Key{}, SIZE_MAX, [&](Key k, Value) {
    const std::string cur(reinterpret_cast<const char*>(k.data()), k.size());
    if (!first && !(prev < cur)) ascending = false;
    prev = cur;
    first = false;
    return true;
  });
  EXPECT_TRUE(ascending);
  return n;
}

//! After the held walk refused the pool: a writer that waited answers corrupt, and so does
//! every request from then on (readers: nothing).
void expect_refused(Roart& t, HoldWalk& hold, const std::vector<std::string>& keys) {
  Status waited = Status::ok;
  std::thread writer([&] { waited = t.insert(as_key("a new key"), 1); });  // waits for the walk
  hold.release();
  writer.join();
  EXPECT_EQ(waited, Status::corrupt);
  const auto traced = t.wait_trace();
  ASSERT_FALSE(traced.ok());
  EXPECT_EQ(traced.error().code, Status::corrupt) << traced.error().message;
  EXPECT_FALSE(t.walk_passed());
  for (std::size_t i = 0; i < keys.size(); i += 97) EXPECT_FALSE(t.lookup(as_key(keys[i]))) << i;
  EXPECT_EQ(scan_all(t), 0u);
  EXPECT_EQ(t.upsert(as_key(keys[1]), 5), Status::corrupt);
  EXPECT_EQ(t.update(as_key(keys[1]), 5), Status::corrupt);
  EXPECT_EQ(t.remove(as_key(keys[1])), Status::corrupt);
}

// Healthy pool: the checked readers answer exactly what the fast ones do, writers wait for
// the walk, then everything is served as after open().
TEST(RoartInstantDamage, CheckedRequestsOnAHealthyPoolAnswerEverything) {
  Built b("healthy");
  ASSERT_TRUE(b.pool);
  HoldWalk hold;
  auto t = Roart::open_instant(*b.pool);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE((*t)->walk_passed());
  for (std::size_t i = 0; i < b.keys.size(); ++i)
    EXPECT_EQ((*t)->lookup(as_key(b.keys[i])), std::optional<Value>(i)) << i;
  EXPECT_FALSE((*t)->lookup(as_key("absent")));
  EXPECT_EQ(scan_all(**t), b.keys.size());
  std::vector<std::string> sorted = b.keys;
  std::sort(sorted.begin(), sorted.end());
  std::size_t in_range = (*t)->range(as_key(sorted[100]), as_key(sorted[200]),
                                     [](Key, Value) { return true; });
  EXPECT_EQ(in_range, 100u);
  EXPECT_EQ((*t)->scan(as_key(sorted[2990]), 100, [](Key, Value) { return true; }), 10u);
  Status waited = Status::not_found;
  std::thread writer([&] { waited = (*t)->upsert(as_key(b.keys[7]), 70); });
  EXPECT_FALSE((*t)->walk_passed());  // held: the writer waits for it
  hold.release();
  writer.join();
  EXPECT_EQ(waited, Status::ok);
  EXPECT_TRUE((*t)->walk_passed());
  EXPECT_EQ((*t)->lookup(as_key(b.keys[7])), std::optional<Value>(70));
  ASSERT_TRUE((*t)->wait_trace().ok());
  EXPECT_TRUE((*t)->verify().ok());
  EXPECT_TRUE(audit(*b.pool, **t).ok());
}

// A child reference of the root N256 pointing out of the pool: the instant open returns,
// lookups under that byte answer nothing and the others their values, a scan stops at it;
// the walk refuses the pool (the synchronous open refuses it at once).
TEST(RoartInstantDamage, AChildPointerOutOfThePoolIsMetByTheRequestThatFollowsIt) {
  Built b("child");
  ASSERT_TRUE(b.pool);
  roart::NodeBase* root = b.root();
  ASSERT_EQ(root->type, roart::NodeType::n256);
  ASSERT_EQ(root->level, 0u);
  const std::uint8_t bad = b.first(0);
  auto* child = &reinterpret_cast<roart::Node256*>(root)->child[bad];
  ASSERT_NE(child->get(), roart::kNull);
  child->raw = (b.pool->size() + (1u << 20)) | roart::kTagArray;
  HoldWalk hold;
  auto t = Roart::open_instant(*b.pool);
  ASSERT_TRUE(t) << t.error().message;
  std::size_t below = 0;
  for (std::size_t i = 0; i < b.keys.size(); ++i) {
    below += b.first(i) < bad;
    EXPECT_EQ((*t)->lookup(as_key(b.keys[i])),
              b.first(i) == bad ? std::nullopt : std::optional<Value>(i))
        << i;
  }
  EXPECT_EQ(scan_all(**t), below);  // every key before the damage, then it stops
  expect_refused(**t, hold, b.keys);
}

// The root node's level with bit 30 flipped (past the key limit; without the check the
// first writer indexed the key there): every request that reaches it answers nothing.
TEST(RoartInstantDamage, AFlippedNodeLevelIsMetByTheRequestThatReachesIt) {
  Built b("level");
  ASSERT_TRUE(b.pool);
  b.root()->level ^= 1u << 30;
  HoldWalk hold;
  auto t = Roart::open_instant(*b.pool);
  ASSERT_TRUE(t) << t.error().message;
  for (std::size_t i = 0; i < b.keys.size(); ++i)
    EXPECT_FALSE((*t)->lookup(as_key(b.keys[i]))) << i;
  EXPECT_EQ(scan_all(**t), 0u);
  expect_refused(**t, hold, b.keys);
}

// A leaf-array slot whose leaf offset is not 16-aligned: readers take the slot's 48 bits as
// the leaf's address, so they would read a leaf one byte past the one the walk checked.
// Both opens refuse it.
TEST(RoartInstantDamage, AMisalignedLeafOffsetInAnArraySlotIsRefused) {
  Built b("slot");
  ASSERT_TRUE(b.pool);
  roart::NodeBase* root = b.root();
  ASSERT_EQ(root->type, roart::NodeType::n256);
  const roart::Ref c = reinterpret_cast<roart::Node256*>(root)->child[b.first(0)].get();
  ASSERT_TRUE(roart::is_array(c));
  auto* a = b.pool->at<roart::LeafArray>(roart::ref_offset(c));
  unsigned i = 0;
  while (a->slot[i].get() == 0) ++i;
  a->slot[i].raw ^= 1;
  auto t = Roart::open(*b.pool);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Status::corrupt) << t.error().message;
}

}  // namespace
}  // namespace wort::test
