// tests/server/lock_cost_test.cc — what the server's locking costs, measured in process on
// a Store (no sockets): gets and sets with 1 and 2 threads on each concurrent index, with
// the one reader/writer lock (StoreOptions::global_lock, the path of wbtree and nvtree) and
// without it (the index's own concurrency: epoch-pinned readers, striped writers), the two
// interleaved per index; and the bare std::shared_mutex acquire/release pair alone with 1
// and 2 threads (the part of a get that is the global lock). A measurement, not a check: it
// runs only with WORT_SERVE_LOCK_BENCH=1 (~30 s) and prints a table; `make test` skips it.
//
//   WORT_SERVE_LOCK_BENCH=1 build/server_lock_cost_test
#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <shared_mutex>
#include <thread>

#include "server/store.h"

namespace wort::test {
namespace {

constexpr int kKeys = 100'000;
constexpr double kSeconds = 1.0;

std::string key_of(std::uint64_t i) {
  char b[24];
  std::snprintf(b, sizeof b, "k%019llu", static_cast<unsigned long long>(i));
  return b;  // 20 bytes, as the WORT paper's test
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

//! Runs fn(thread, rng) in `threads` threads for kSeconds. Returns CPU nanoseconds per
//! operation (the threads' CPU time over the operations they did): on a shared machine the
//! threads may not get a core each, and CPU time per operation is what the lock's cache-line
//! traffic raises.
template <class F>
double cpu_ns_per_op(int threads, F fn) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> total{0};
  std::atomic<double> cpu{0};
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t)
    th.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 1);
      std::uint64_t n = 0;
      const double c0 = thread_cpu_ns();
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; ++i) fn(t, rng);
        n += 64;
      }
      double c = cpu.load();
      while (!cpu.compare_exchange_weak(c, c + thread_cpu_ns() - c0)) {
      }
      total += n;
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(kSeconds));
  stop = true;
  for (auto& x : th) x.join();
  return cpu.load() / static_cast<double>(total.load());
}

TEST(ServeLockCost, GetsAndSetsWithOneAndTwoThreads) {
  if (!std::getenv("WORT_SERVE_LOCK_BENCH"))
    GTEST_SKIP() << "a measurement: set WORT_SERVE_LOCK_BENCH=1 to run it";
  const std::string value(32, 'v');
  std::printf("| index | locking | op | CPU ns/op, 1 thread | CPU ns/op, 2 threads | 2/1 |\n"
              "|---|---|---|---|---|---|\n");
  for (const char* kind : {"wort", "woart", "artcow"})
  for (const bool global : {true, false}) {
    const std::string path = "/dev/shm/wort-lockcost-" + std::to_string(getpid()) + ".pool";
    std::filesystem::remove(path);
    server::StoreOptions so;
    so.pool_path = path;
    so.kind = kind;
    so.pool_bytes = 256ull << 20;
    so.global_lock = global;
    auto st = server::Store::open(so);
    ASSERT_TRUE(st) << st.error().message;
    server::Store& s = **st;
    ASSERT_EQ(s.concurrent(), !global);
    for (int i = 0; i < kKeys; ++i)
      ASSERT_EQ(s.store(server::StoreMode::set, key_of(i), 0, 0, value), server::StoreResult::stored);
    std::uint64_t sink = 0;
    auto get = [&](int, std::mt19937_64& rng) {
      s.get(key_of(rng() % kKeys), [&](const server::ItemView& v) { sink += v.value.size(); });
    };
    auto set = [&](int, std::mt19937_64& rng) {
      s.store(server::StoreMode::set, key_of(rng() % kKeys), 0, 0, value);
    };
    for (auto [name, fn] : {std::pair<const char*, std::function<void(int, std::mt19937_64&)>>{
                                "get", get},
                            {"set", set}}) {
      const double one = cpu_ns_per_op(1, fn), two = cpu_ns_per_op(2, fn);
      std::printf("| %s | %s | %s | %.0f | %.0f | %.2f |\n", kind,
                  global ? "global rwlock" : "index's own", name, one, two, two / one);
    }
    EXPECT_GT(sink, 0u);
    st->reset();
    std::filesystem::remove(path);
  }
  // The lock alone: one std::shared_mutex shared acquire + release (what every get pays),
  // uncontended (1 thread) and with 2 threads taking it on the same cache line.
  std::shared_mutex m;
  auto pair = [&](int, std::mt19937_64&) {
    m.lock_shared();
    m.unlock_shared();
  };
  const double one = cpu_ns_per_op(1, pair), two = cpu_ns_per_op(2, pair);
  std::printf("| (lock only) | | shared acquire+release | %.0f | %.0f | %.2f |\n", one, two,
              two / one);
}

}  // namespace
}  // namespace wort::test

namespace wort::test {
namespace {

// For callgrind (deterministic instruction counts, no timing): 10,000 keys preloaded, then
// WORT_SERVE_LOCK_SETS sets and WORT_SERVE_LOCK_GETS gets on one thread, on wort with the
// global lock (WORT_SERVE_LOCK_GLOBAL=1) or without it, values of WORT_SERVE_LOCK_VALUE
// bytes (32 unless given). Run it with 0 and with N operations and divide the difference
// by N:
//   WORT_SERVE_LOCK_SETS=20000 WORT_SERVE_LOCK_GLOBAL=1 valgrind --tool=callgrind
//     build/server_lock_cost_test --gtest_filter='*Counted*'   (one command line)
TEST(ServeLockCost, CountedOpsForCallgrind) {
  const char* sets_env = std::getenv("WORT_SERVE_LOCK_SETS");
  const char* gets_env = std::getenv("WORT_SERVE_LOCK_GETS");
  if (!sets_env && !gets_env)
    GTEST_SKIP() << "a measurement: set WORT_SERVE_LOCK_SETS / WORT_SERVE_LOCK_GETS";
  const long sets = sets_env ? std::atol(sets_env) : 0, gets = gets_env ? std::atol(gets_env) : 0;
  const bool global = std::getenv("WORT_SERVE_LOCK_GLOBAL") != nullptr &&
                      std::string(std::getenv("WORT_SERVE_LOCK_GLOBAL")) == "1";
  const std::string path = "/dev/shm/wort-lockcount-" + std::to_string(getpid()) + ".pool";
  std::filesystem::remove(path);
  server::StoreOptions so;
  so.pool_path = path;
  so.kind = "wort";
  so.pool_bytes = 64ull << 20;
  so.global_lock = global;
  auto st = server::Store::open(so);
  ASSERT_TRUE(st) << st.error().message;
  server::Store& s = **st;
  ASSERT_EQ(s.concurrent(), !global);
  const char* value_env = std::getenv("WORT_SERVE_LOCK_VALUE");
  const std::string value(value_env ? static_cast<std::size_t>(std::atol(value_env)) : 32, 'v');
  constexpr int kPreload = 10'000;
  for (int i = 0; i < kPreload; ++i)
    ASSERT_EQ(s.store(server::StoreMode::set, key_of(i), 0, 0, value), server::StoreResult::stored);
  std::mt19937_64 rng(1);
  for (long i = 0; i < sets; ++i)
    s.store(server::StoreMode::set, key_of(rng() % kPreload), 0, 0, value);
  std::uint64_t sink = 0;
  for (long i = 0; i < gets; ++i)
    s.get(key_of(rng() % kPreload), [&](const server::ItemView& v) { sink += v.value.size(); });
  EXPECT_EQ(sink, static_cast<std::uint64_t>(gets) * value.size());
  st->reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wort::test
