// kill -9 of a process with several writer threads, for every concurrent kind (registry
// entry `concurrent`) on the shapes of its row in tests/conformance/kinds.h (kKill: for
// FPTree also leaves of 4 under inner nodes of 3, alone and in groups of 3, so that splits
// under the one micro-log, unlinks with the previous leaf locked and inner-node changes
// happen all the time when the kill comes; leaf lock words then read as held by a dead
// writer of an older generation, which open() must take as free). A forked child creates a
// file pool and runs kWriters threads, each
// applying its own deterministic stream of upserts and removes over its own keys (key i
// belongs to thread i % kWriters) while a reader thread looks up and scans, and
// acknowledging every completed operation through one pipe as (thread, operation number)
// — one write of 16 bytes, atomic on a pipe. The parent SIGKILLs the child once enough
// operations are acknowledged, drains the pipe, reopens the pool (recovery) and checks:
// every key holds what its thread's acknowledged prefix left there, except each thread's
// one in-flight key, which holds either the value before or the value after that operation;
// then verify(), the allocator audit (blocks retired to the epochs and not yet freed when
// the process died are unreachable, so the trace frees them), one more insert, and one
// more write of every key (a lock a dead writer held must read as free, or this hangs).
// The same with one writer (tests/support/kill_reopen.h) runs for every persistent kind.
// Not a *_concurrency_test: the TSan build does not fork children that it then kills.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pm/allocator.h"
#include "support/keygen.h"
#include "support/kill_reopen.h"
#include "conformance/kinds.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

constexpr unsigned kWriters = 3;
constexpr std::size_t kKeys = 6000;            // kKeys / kWriters each
constexpr std::uint64_t kKillAfter = 30000;    // acknowledged operations, all threads

//! Operation j of writer t: one of t's keys, removed (one in four) or upserted with a value
//! unique to (t, j).
struct ThreadOp {
  std::size_t key;
  bool remove;
  Value value;
};
ThreadOp op_of(unsigned t, std::uint64_t j) {
  std::mt19937_64 rng((j + 1) * 0x9e3779b97f4a7c15ull ^ (t + 1) * 0xbf58476d1ce4e5b9ull);
  const std::size_t mine = kKeys / kWriters;
  return ThreadOp{(rng() % mine) * kWriters + t, rng() % 4 == 0,
                  (std::uint64_t{t} + 1) << 40 | j};
}

struct Ack {
  std::uint64_t thread;
  std::uint64_t op;
};
static_assert(sizeof(Ack) <= PIPE_BUF);

[[noreturn]] void child_run(const KindShape& ks, const std::vector<std::string>& keys,
                            const std::string& path, int fd) {
  PoolOptions o;
  o.size = 128ull << 20;
  o.kind = ks.kind;
  auto pool = Pool::create(path, o);
  if (!pool) _exit(2);
  auto tree = registry::find(ks.kind)->create(**pool, ks.options());
  if (!tree) _exit(3);
  Index& t = **tree;
  std::vector<std::thread> th;
  for (unsigned w = 0; w < kWriters; ++w)
    th.emplace_back([&, w] {
      for (std::uint64_t j = 0;; ++j) {
        const ThreadOp op = op_of(w, j);
        const Key k = as_key(keys[op.key]);
        const Status s = op.remove ? t.remove(k) : t.upsert(k, op.value);
        if (s != Status::ok && !(op.remove && s == Status::not_found)) _exit(4);
        const Ack a{w, j};
        if (write(fd, &a, sizeof a) != sizeof a) _exit(5);
      }
    });
  th.emplace_back([&] {  // a reader, so that epochs are pinned when the kill comes
    for (std::uint64_t n = 0;; ++n) {
      (void)t.lookup(as_key(keys[n % keys.size()]));
      if (n % 32 == 0) t.scan(as_key(keys[n % keys.size()]), 50, [](Key, Value) { return true; });
    }
  });
  for (;;) pause();  // killed by the parent
}

//! Forks the child, reads acknowledgements until kKillAfter, SIGKILLs it, drains the pipe.
//! Returns per thread the number of acknowledged operations (empty on failure).
std::vector<std::uint64_t> run_child_and_kill(const KindShape& ks,
                                              const std::vector<std::string>& keys,
                                              const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return {};
  }
  if (pid == 0) {
    close(fds[0]);
    child_run(ks, keys, path, fds[1]);
  }
  close(fds[1]);
  std::vector<std::uint64_t> acked(kWriters, 0);
  std::uint64_t total = 0;
  Ack a;
  auto take = [&] {
    if (a.thread >= kWriters || a.op != acked[a.thread]) {
      ADD_FAILURE() << "acknowledgement out of order: thread " << a.thread << " op " << a.op;
      return;
    }
    acked[a.thread] = a.op + 1;
    ++total;
  };
  while (total < kKillAfter && read(fds[0], &a, sizeof a) == sizeof a) take();
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(fds[0], &a, sizeof a) == sizeof a) take();  // acks still in the pipe
  close(fds[0]);
  EXPECT_TRUE(WIFSIGNALED(status)) << "child exited on its own, status " << status;
  EXPECT_GE(total, kKillAfter) << "child stopped early";
  if (!WIFSIGNALED(status) || total < kKillAfter) return {};
  return acked;
}

void reopen_and_check(const KindShape& ks, const std::vector<std::string>& keys,
                      const std::string& path,
                      const std::vector<std::uint64_t>& acked) {
  std::map<std::size_t, Value> expect;
  std::map<std::size_t, std::optional<Value>> in_flight;  // key -> its value after the op
  for (unsigned t = 0; t < kWriters; ++t) {
    for (std::uint64_t j = 0; j < acked[t]; ++j) {
      const ThreadOp op = op_of(t, j);
      if (op.remove) expect.erase(op.key);
      else expect[op.key] = op.value;
    }
    const ThreadOp next = op_of(t, acked[t]);
    in_flight[next.key] = next.remove ? std::nullopt : std::optional<Value>(next.value);
  }
  auto pool = Pool::open(path, ks.kind);
  ASSERT_TRUE(pool) << pool.error().message;
  auto tree = registry::find(ks.kind)->open(**pool);
  ASSERT_TRUE(tree) << tree.error().message;
  std::size_t present = 0;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const auto it = expect.find(k);
    const auto before = it == expect.end() ? std::nullopt : std::optional<Value>(it->second);
    const auto got = (*tree)->lookup(as_key(keys[k]));
    present += got.has_value();
    if (const auto f = in_flight.find(k); f != in_flight.end()) {
      EXPECT_TRUE(got == before || got == f->second) << "in-flight key " << k;
    } else {
      EXPECT_EQ(got, before) << "key " << k;
    }
  }
  EXPECT_GT(present, 0u);
  const auto v = (*tree)->verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  auto audit = (*pool)->allocator().audit(
      [&](pm::BlockVisitor bv) { return (*tree)->visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  EXPECT_EQ((*tree)->insert(as_key(std::string("after-the-crash")), 1), Status::ok);
  // Every leaf is written once more: a leaf lock the dead writers held must read as free
  // (its generation is older), or this hangs.
  for (std::size_t k = 0; k < keys.size(); ++k)
    ASSERT_EQ((*tree)->upsert(as_key(keys[k]), Value{k}), Status::ok);
  EXPECT_TRUE((*tree)->verify().ok());
}

class ThreadsKill : public ::testing::TestWithParam<KindShape> {};

TEST_P(ThreadsKill, AcknowledgedWritesOfEveryWriterThreadSurviveKill9) {
  const KindShape& ks = GetParam();
  const auto keys = make_keys(Gen::random_bytes, kKeys, 23);
  const auto dir = std::filesystem::temp_directory_path() /
                   (ks.name() + "_threads_kill_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "pool").string();
  const auto acked = run_child_and_kill(ks, keys, path);
  if (!acked.empty()) {
    std::printf("[%s threads kill] acknowledged per writer:", ks.name().c_str());
    for (auto a : acked) std::printf(" %llu", static_cast<unsigned long long>(a));
    std::printf("\n");
    for (auto a : acked) EXPECT_GT(a, 0u) << "a writer never ran";
    reopen_and_check(ks, keys, path, acked);
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ConcurrentKinds, ThreadsKill,
                         ::testing::ValuesIn(kind_shapes(kKill, /*concurrent=*/true)),
                         [](const auto& info) { return info.param.name(); });

// One writer process, upserts and removes through a file pool, for every persistent kind.
class Kill : public ::testing::TestWithParam<KindShape> {};

TEST_P(Kill, AcknowledgedWritesSurviveKill9) {
  const KindShape& ks = GetParam();
  const registry::Entry* e = registry::find(ks.kind);
  const IndexOptions o = ks.options();
  KillReopenSpec spec;
  spec.tree = crashsim::Factory{ks.kind, [e, o](Pool& p) { return e->create(p, o); },
                                [e](Pool& p) { return e->open(p); }};
  spec.keys = make_keys(Gen::random_bytes, 4000, 5);
  spec.stream = random_upserts_and_removes(spec.keys.size());
  spec.kill_after = 6000;
  kill_and_reopen(spec);
}

std::vector<KindShape> persistent_defaults() {
  std::vector<KindShape> out;
  for (const registry::Entry* e : registry::all())
    if (e->persistent) out.push_back({e->name, traits_of(e->name).shapes.front(), true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(PersistentKinds, Kill, ::testing::ValuesIn(persistent_defaults()),
                         [](const auto& info) { return info.param.kind; });

}  // namespace
}  // namespace wort::test
