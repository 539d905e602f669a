// tests/server/start_test.cc — what `wort serve` does with the pool file when it starts:
//   - `--check` of a missing pool is an error and creates nothing;
//   - a start that fails (port in use, an address not ours) leaves no new pool behind;
//   - a pool whose first start was killed before the server's meta block was written (its
//     index root unset, or an empty index) is initialised, not refused; a pool with data
//     but no meta block, or a library pool, is still refused;
//   - --help shows serve's own options only; -m / --index for an existing pool warn.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pm/allocator.h"
#include "server_harness.h"
#include "wort/index.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

//! Runs `wort serve ARGS` (at most 20 s); stdout+stderr into `out`. Returns the exit status.
int serve(const std::string& args, std::string* out = nullptr) {
  const std::string log = temp_path("start-log");
  const int rc = run("timeout 20 " + wort_binary() + " serve " + args + " >" + log + " 2>&1");
  if (out) *out = slurp(log);
  std::filesystem::remove(log);
  return rc;
}

//! A pool path in the temporary directory with no file at it (one an earlier run left is
//! removed).
std::string fresh_pool(const std::string& tag) {
  const std::string pool = temp_path(tag) + ".pool";
  std::filesystem::remove(pool);
  return pool;
}

TEST(ServeStart, CheckOfAMissingPoolFailsAndCreatesNothing) {
  const std::string pool = fresh_pool("missing");
  std::string out;
  EXPECT_NE(serve("--pool " + pool + " --check", &out), 0) << out;
  EXPECT_NE(out.find("no pool"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(pool));
}

TEST(ServeStart, AFailedStartLeavesNoNewPool) {
  const std::string busy = fresh_pool("busy");
  ServerProc srv;
  ASSERT_TRUE(srv.start(busy, {"-t", "1", "-m", "4"}));
  const std::string pool = fresh_pool("failed");
  std::string out;
  EXPECT_NE(serve("--pool " + pool + " -m 4 -t 1 -p " + std::to_string(srv.port()), &out), 0);
  EXPECT_NE(out.find("cannot listen"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(pool)) << "port in use";
  EXPECT_NE(serve("--pool " + pool + " -m 4 -t 1 -p 0 -l 1.2.3.4", &out), 0);
  EXPECT_FALSE(std::filesystem::exists(pool)) << "address not ours";
  // An existing pool is of course kept.
  srv.stop();
  EXPECT_NE(serve("--pool " + busy + " -t 1 -p 0 -l 1.2.3.4", &out), 0);
  EXPECT_TRUE(std::filesystem::exists(busy));
  std::filesystem::remove(busy);
}

//! A pool as a first start killed at the given point leaves it.
void make_unfinished(const std::string& path, bool with_index, bool with_item) {
  std::filesystem::remove(path);
  PoolOptions po;
  po.size = 4u << 20;
  po.kind = "wort";
  po.values_are_blocks = true;
  auto p = Pool::create(path, po);
  ASSERT_TRUE(bool(p)) << p.error().message;
  if (!with_index) return;
  auto ix = Index::create(**p, "wort");
  ASSERT_TRUE(bool(ix)) << ix.error().message;
  if (!with_item) return;
  std::uint64_t off = 0;
  ASSERT_EQ((*p)->allocator().allocate(64, &off), Status::ok);
  ASSERT_EQ((*ix)->insert(as_key(std::string_view("somekey")), off), Status::ok);
}

TEST(ServeStart, AnUnfinishedFirstStartIsCompleted) {
  const std::string pool = temp_path("unfinished") + ".pool";
  for (bool with_index : {false, true}) {
    SCOPED_TRACE(with_index ? "index created, no meta block" : "no index root");
    make_unfinished(pool, with_index, false);
    std::string out;
    EXPECT_EQ(serve("--pool " + pool + " --check", &out), 0) << out;
    EXPECT_NE(out.find("audit clean"), std::string::npos) << out;
    ServerProc srv;
    ASSERT_TRUE(srv.start(pool, {"-t", "1"}));
    Client c(srv.port());
    EXPECT_EQ(c.cmd("set a 0 0 1\r\nx\r\n", "\r\n"), "STORED\r\n");
    EXPECT_EQ(c.cmd("get a\r\n", "END\r\n"), "VALUE a 0 1\r\nx\r\nEND\r\n");
    srv.kill9();
    EXPECT_EQ(serve("--pool " + pool + " --check", &out), 0) << out;
    EXPECT_NE(out.find("items 1 "), std::string::npos) << out;
  }
  std::filesystem::remove(pool);
}

TEST(ServeStart, APoolWithDataButNoMetaBlockIsRefused) {
  const std::string pool = temp_path("nometa") + ".pool";
  make_unfinished(pool, true, true);
  std::string out;
  EXPECT_NE(serve("--pool " + pool + " --check", &out), 0) << out;
  EXPECT_NE(out.find("no server meta block"), std::string::npos) << out;
  // A library pool (values are not item blocks) with an index: refused as before.
  std::filesystem::remove(pool);
  {
    PoolOptions po;
    po.size = 4u << 20;
    po.kind = "wort";
    auto p = Pool::create(pool, po);
    ASSERT_TRUE(bool(p));
    auto ix = Index::create(**p, "wort");
    ASSERT_TRUE(bool(ix));
  }
  EXPECT_NE(serve("--pool " + pool + " --check", &out), 0) << out;
  EXPECT_NE(out.find("not created by wort serve"), std::string::npos) << out;
  std::filesystem::remove(pool);
}

TEST(ServeStart, HelpShowsServeOptionsOnlyAndIgnoredOptionsWarn) {
  std::string out;
  EXPECT_EQ(serve("--help", &out), 0);
  EXPECT_NE(out.find("--index KIND"), std::string::npos) << out;
  EXPECT_NE(out.find("roart"), std::string::npos) << out;
  for (const char* absent : {"--dist", "--workload", " art ", "art:", "(not art"})
    EXPECT_EQ(out.find(absent), std::string::npos) << absent << " in:\n" << out;
  const std::string pool = fresh_pool("warn");
  {
    ServerProc srv;
    ASSERT_TRUE(srv.start(pool, {"-t", "1", "-m", "4"}));
  }
  EXPECT_EQ(serve("--pool " + pool + " -m 8 --index woart --check", &out), 0) << out;
  EXPECT_NE(out.find("-m ignored: the pool exists (-m 4 MiB)"), std::string::npos) << out;
  EXPECT_NE(out.find("--index ignored: the pool exists (wort index)"), std::string::npos) << out;
  EXPECT_EQ(serve("--pool " + pool + " --check", &out), 0) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  std::filesystem::remove(pool);
}

// The DRAM side tables (CLOCK bits, tokens, access times: up to 1/8 + 1/64 of the pool) are
// resident only where items have been. As vectors of atomics they were, every
// element written when built: a 4 GiB pool's server held ~590 MB of anonymous memory before
// its first request (9.4 GB at -m 65536). Skipped where the 4 GiB file cannot be reserved.
TEST(ServeStart, AnEmptyLargePoolTakesLittleDram) {
  const std::string pool = fresh_pool("large");
  {
    ServerProc srv;
    if (!srv.start(pool, {"-t", "1", "-m", "4096"})) {
      std::filesystem::remove(pool);
      GTEST_SKIP() << "no room for a 4 GiB pool here";
    }
    std::uint64_t anon_kb = 0;
    std::ifstream status("/proc/" + std::to_string(srv.pid()) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("RssAnon:", 0) == 0) anon_kb = std::stoull(line.substr(8));
    ASSERT_GT(anon_kb, 0u);
    EXPECT_LT(anon_kb, 200u << 10) << "RssAnon " << anon_kb << " kB for an empty 4 GiB pool";
  }
  std::filesystem::remove(pool);
}

// -I above half of -m for a new pool is refused, as memcached refuses it (it was accepted
// once, and stats reported an item_size_max no item could reach).
TEST(ServeStart, AnItemLimitAboveHalfTheMemoryIsRefused) {
  const std::string pool = fresh_pool("big-items");
  std::string out;
  EXPECT_EQ(serve("--pool " + pool + " -m 4 -I 3m --port 0", &out), 2) << out;
  EXPECT_NE(out.find("-I: at most half of -m"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(pool));
}

}  // namespace
}  // namespace wort::test
