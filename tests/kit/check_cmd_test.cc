// `wort check` and `wort dump` as an operator runs them: exit 0 on a sound pool (and the
// file is not changed by checking it), 1 on a damaged one, 2 when it cannot check (no such
// file, the pool in use); dump prints a key's value. For every registered persistent index.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kit/kit_support.h"
#include "pm/pool_layout.h"

namespace wort {
namespace {

struct CmdRun {
  int status = -1;
  std::string out;
};

CmdRun run_wort(const std::string& args) {
  CmdRun r;
  const std::string cmd = std::string(WORT_BINARY_DIR) + "/wort " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

class CheckCmd : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckCmd, SoundDamagedMissingAndInUsePoolsGetTheirExitStatus) {
  const std::string kind = GetParam();
  kittest::TempPath path(kind + "-check");
  std::uint64_t anchor = 0;
  {
    PoolOptions o;
    o.size = 4u << 20;
    o.kind = kind;
    auto pool = Pool::create(path.str(), o);
    ASSERT_TRUE(pool.ok());
    auto ix = Index::create(**pool, kind);
    ASSERT_TRUE(ix.ok());
    for (std::uint64_t i = 0; i < 2000; ++i)
      ASSERT_EQ((*ix)->insert(as_key("key" + std::to_string(i)), i * 3), Status::ok);
    anchor = (*pool)->root();
  }
  const std::string before = slurp(path.str());
  CmdRun ok = run_wort("check " + path.str());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("OK: " + kind), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("keys              2000"), std::string::npos) << ok.out;
  EXPECT_EQ(slurp(path.str()), before) << "wort check wrote to the pool file";

  CmdRun found = run_wort("dump " + path.str() + " key77");
  EXPECT_EQ(found.status, 0) << found.out;
  EXPECT_EQ(found.out, "231\n");
  EXPECT_EQ(run_wort("dump " + path.str() + " nokey").status, 1);

  {  // in use: a writer holds the pool
    auto holder = Pool::open(path.str());
    ASSERT_TRUE(holder.ok());
    CmdRun busy = run_wort("check " + path.str());
    EXPECT_EQ(busy.status, 2) << busy.out;
    EXPECT_NE(busy.out.find("in use"), std::string::npos) << busy.out;
  }
  EXPECT_EQ(run_wort("check " + path.str() + ".missing").status, 2);

  {  // damaged: the anchor's magic overwritten
    std::fstream f(path.str(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(anchor));
    f.write("garbage!", 8);
  }
  CmdRun bad = run_wort("check " + path.str());
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("DAMAGED"), std::string::npos) << bad.out;

  {  // damaged header (its chunk count): the message names the file, not check's mapping of
     // it ("<image at 0x...>" until session 19)
    std::fstream f(path.str(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offsetof(pm::PoolHeader, chunk_count)));
    f.write("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  }
  CmdRun header = run_wort("check " + path.str());
  EXPECT_EQ(header.status, 1) << header.out;
  EXPECT_NE(header.out.find(path.str()), std::string::npos) << header.out;
  EXPECT_EQ(header.out.find("<image at"), std::string::npos) << header.out;
}

// A pool created but given no index (a crash between Pool::create and Index::create):
// check calls it sound and says why; dump of a key says not found (exit 1, as --help
// promises) — it exited 0 before session 18 (an outside review's find).
TEST(CheckCmdNoIndex, CheckSaysSoDumpOfAKeyIsNotFound) {
  kittest::TempPath path("noindex-check");
  {
    PoolOptions o;
    o.size = 4u << 20;
    o.kind = "wort";
    ASSERT_TRUE(Pool::create(path.str(), o).ok());
  }
  CmdRun check = run_wort("check " + path.str());
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("holds no index"), std::string::npos) << check.out;
  CmdRun key = run_wort("dump " + path.str() + " foo");
  EXPECT_EQ(key.status, 1) << key.out;
  EXPECT_EQ(run_wort("dump " + path.str()).status, 0);
}

// A FIFO (or anything not a file or device) cannot be checked: exit 2 at once. check and
// dump blocked in open() forever before session 18, waiting for a writer.
TEST(CheckCmdNoIndex, AFifoCannotBeCheckedAndDoesNotHang) {
  kittest::TempPath path("fifo-check");
  ASSERT_EQ(::mkfifo(path.str().c_str(), 0600), 0);
  CmdRun check = run_wort("check " + path.str());
  EXPECT_EQ(check.status, 2) << check.out;
  EXPECT_NE(check.out.find("not a regular file"), std::string::npos) << check.out;
  CmdRun dump = run_wort("dump " + path.str() + " k");
  EXPECT_EQ(dump.status, 2) << dump.out;
  // dump names itself (it said "cannot check" before session 20).
  EXPECT_NE(dump.out.find("cannot dump: "), std::string::npos) << dump.out;
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, CheckCmd,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
