// `wort check` and `wort dump` as an operator runs them, with one exit-status table: 0 a
// sound pool (and the file is not changed by checking it), 1 a damaged one, 2 when it
// cannot check (no such file, not a pool, the pool in use), 3 dump of a key that is not
// there. For every registered persistent index, and for a pool `wort serve` wrote.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>

#include "index/kit/kit_support.h"
#include "pm/pool_layout.h"
#include "server/server_harness.h"
#include "support/wort_cmd.h"

namespace wort {
namespace {

using test::CmdRun;
using test::run_wort;
using test::slurp;

//! A new 4 MiB pool file at `path` for `kind`, with `n` keys key(i) -> value(i) in an
//! index of that kind; the pool's root offset in *anchor (if given).
template <class KeyFn, class ValueFn>
void make_pool_file(const std::string& path, const std::string& kind, int n, KeyFn key,
                    ValueFn value, std::uint64_t* anchor = nullptr) {
  PoolOptions o;
  o.size = 4u << 20;
  o.kind = kind;
  auto pool = Pool::create(path, o);
  ASSERT_TRUE(pool.ok());
  auto ix = Index::create(**pool, kind);
  ASSERT_TRUE(ix.ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ((*ix)->insert(as_key(key(i)), value(i)), Status::ok);
  if (anchor != nullptr) *anchor = (*pool)->root();
}

class CheckCmd : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckCmd, SoundDamagedMissingAndInUsePoolsGetTheirExitStatus) {
  const std::string kind = GetParam();
  kittest::TempPath path(kind + "-check");
  std::uint64_t anchor = 0;
  ASSERT_NO_FATAL_FAILURE(make_pool_file(
      path.str(), kind, 2000, [](int i) { return "key" + std::to_string(i); },
      [](int i) { return static_cast<Value>(i) * 3; }, &anchor));
  const std::string before = slurp(path.str());
  CmdRun ok = run_wort("check " + path.str());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("OK: " + kind), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("keys              2000"), std::string::npos) << ok.out;
  EXPECT_EQ(slurp(path.str()), before) << "wort check wrote to the pool file";

  CmdRun found = run_wort("dump " + path.str() + " key77");
  EXPECT_EQ(found.status, 0) << found.out;
  EXPECT_EQ(found.out, "231\n");
  CmdRun absent = run_wort("dump " + path.str() + " nokey");
  EXPECT_EQ(absent.status, 3) << absent.out;  // absent: not the damaged pool's 1
  EXPECT_EQ(absent.out, "not found\n");

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
     // it (not "<image at 0x...>")
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
// check calls it sound and says why; dump of a key says not found (exit 3, as --help
// promises).
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
  EXPECT_EQ(key.status, 3) << key.out;
  EXPECT_EQ(run_wort("dump " + path.str()).status, 0);
}

// A FIFO (or anything not a file or device) cannot be checked: exit 2 at once. check and
// dump must not block in open() waiting for a writer.
TEST(CheckCmdNoIndex, AFifoCannotBeCheckedAndDoesNotHang) {
  kittest::TempPath path("fifo-check");
  ASSERT_EQ(::mkfifo(path.str().c_str(), 0600), 0);
  CmdRun check = run_wort("check " + path.str());
  EXPECT_EQ(check.status, 2) << check.out;
  EXPECT_NE(check.out.find("not a regular file"), std::string::npos) << check.out;
  CmdRun dump = run_wort("dump " + path.str() + " k");
  EXPECT_EQ(dump.status, 2) << dump.out;
  // dump names itself (not "cannot check").
  EXPECT_NE(dump.out.find("cannot dump: "), std::string::npos) << dump.out;
}

// Leaves damaged where the open's checked walk does not look (one key's bytes changed in
// place, so it no longer sorts or hashes where it sits): check calls the pool damaged, and
// dump gives the same verdict (exit 1, nothing drawn) instead of drawing the damaged leaves;
// dump of a key in it is 1 as well, not the absent key's 3.
TEST_P(CheckCmd, DumpGivesChecksVerdictOnDamageTheOpenAccepts) {
  const std::string kind = GetParam();
  kittest::TempPath path(kind + "-leafdamage");
  char name[32];
  auto key = [&](int i) {
    std::snprintf(name, sizeof name, "check-key-%05d", i);
    return std::string(name);
  };
  ASSERT_NO_FATAL_FAILURE(make_pool_file(path.str(), kind, 2000, key,
                                         [](int i) { return static_cast<Value>(i) + 1; }));
  std::string image = slurp(path.str());
  const std::string victim = key(1000);
  std::size_t changed = 0;
  for (std::size_t at = image.find(victim); at != std::string::npos;
       at = image.find(victim, at + 1), ++changed)
    image[at + victim.size() - 1] = 'Z';  // "check-key-0100Z": sorts after 01009
  ASSERT_GT(changed, 0u) << "the key's bytes are not in the pool file";
  { std::ofstream(path.str(), std::ios::binary | std::ios::trunc) << image; }
  CmdRun check = run_wort("check " + path.str());
  CmdRun dump = run_wort("dump " + path.str());
  CmdRun dump_key = run_wort("dump " + path.str() + " " + key(5));
  EXPECT_EQ(check.status, 1) << check.out;
  EXPECT_NE(check.out.find("DAMAGED"), std::string::npos) << check.out;
  EXPECT_EQ(dump.status, check.status) << dump.out;
  EXPECT_NE(dump.out.find("DAMAGED"), std::string::npos) << dump.out;
  EXPECT_EQ(dump_key.status, check.status) << dump_key.out;
}

// Not a pool, whatever its size: a small text file (as /etc/passwd) is "not a pool" (2),
// not a damaged pool (1); an empty one and a 5000-byte one too, and dump says the same.
TEST(CheckCmdExitStatus, AFileWithoutThePoolMagicIsNotAPool) {
  kittest::TempPath small("text-small"), empty("text-empty"), big("text-big");
  { std::ofstream(small.str()) << "root:x:0:0:root:/root:/bin/bash\n"; }
  { std::ofstream(empty.str()); }
  { std::ofstream(big.str()) << std::string(5000, 'x'); }
  for (const std::string* p : {&small.str(), &empty.str(), &big.str()}) {
    CmdRun check = run_wort("check " + *p);
    EXPECT_EQ(check.status, 2) << check.out;
    EXPECT_NE(check.out.find("not a pool"), std::string::npos) << check.out;
    EXPECT_EQ(check.out.find("DAMAGED"), std::string::npos) << check.out;
    CmdRun dump = run_wort("dump " + *p + " k");
    EXPECT_EQ(dump.status, 2) << dump.out;
    EXPECT_NE(dump.out.find("not a pool"), std::string::npos) << dump.out;
  }
  // A real pool cut short keeps its magic: that is damage (1), not "not a pool".
  kittest::TempPath cut("pool-cut");
  {
    PoolOptions o;
    o.size = 4u << 20;
    o.kind = "wort";
    ASSERT_TRUE(Pool::create(cut.str(), o).ok());
  }
  ASSERT_EQ(::truncate(cut.str().c_str(), 3000), 0);
  CmdRun check = run_wort("check " + cut.str());
  EXPECT_EQ(check.status, 1) << check.out;
  EXPECT_NE(check.out.find("truncated"), std::string::npos) << check.out;
  EXPECT_EQ(run_wort("dump " + cut.str()).status, 1);
}

// --help of both commands states the one exit-status table.
TEST(CheckCmdExitStatus, HelpStatesTheTable) {
  for (const char* cmd : {"check --help", "dump --help"}) {
    CmdRun h = run_wort(cmd);
    EXPECT_EQ(h.status, 0) << h.out;
    for (const char* line : {"  0  the pool is sound", "  1  the pool is damaged",
                             "  2  it could not be checked", "  3  dump KEY: the pool is sound"})
      EXPECT_NE(h.out.find(line), std::string::npos) << cmd << " lacks '" << line << "':\n" << h.out;
  }
}

class CheckServerPool : public ::testing::TestWithParam<std::string> {};

// A pool `wort serve` wrote (values are item blocks), after 200 sets and a clean stop:
// `wort check` and `wort serve --check` both call it clean (check opens it as the server's
// store: an audit of the index's own blocks calls every item block leaked); dump finds a key.
// Then one item's magic overwritten: both call it damaged, and dump says so too.
TEST_P(CheckServerPool, CheckAndServeCheckAgree) {
  const std::string kind = GetParam();
  const std::string pool = test::temp_path("check-" + kind);
  std::remove(pool.c_str());
  {
    test::ServerProc srv;
    ASSERT_TRUE(srv.start(pool, {"--index", kind, "-m", "8", "-t", "1"}));
    test::Client c(srv.port());
    ASSERT_TRUE(c.ok());
    std::string req;
    for (int i = 0; i < 200; ++i) {
      const std::string v = "value-" + std::to_string(i);
      req += "set item" + std::to_string(i) + " 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n";
    }
    ASSERT_TRUE(c.send(req));
    const std::string got = c.read_lines(200);
    std::size_t stored = 0;
    for (std::size_t p = 0; (p = got.find("STORED\r\n", p)) != std::string::npos; p += 8) ++stored;
    ASSERT_EQ(stored, 200u) << got;
    ASSERT_EQ(srv.stop(), 0);
  }
  CmdRun serve_check = run_wort("serve --pool " + pool + " --check");
  EXPECT_EQ(serve_check.status, 0) << serve_check.out;
  EXPECT_NE(serve_check.out.find("items 200 "), std::string::npos) << serve_check.out;
  const std::string after_serve_check = slurp(pool);
  CmdRun check = run_wort("check " + pool);
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("OK: " + kind + " pool"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("200 items"), std::string::npos) << check.out;
  EXPECT_EQ(slurp(pool), after_serve_check) << "wort check wrote to the pool file";
  CmdRun item = run_wort("dump " + pool + " item7");
  EXPECT_EQ(item.status, 0) << item.out;  // the item's block offset
  EXPECT_EQ(run_wort("dump " + pool + " item200").status, 3);

  // One item's header damaged: its magic, the word just before the item's key (an item is
  // its 32-byte header, the key, the value: server/item_layout.h).
  std::string image = slurp(pool);
  const std::size_t at = image.find("item7value-7");
  ASSERT_NE(at, std::string::npos) << "item7's key and value are not in the pool file";
  ASSERT_GE(at, 4u);
  image.replace(at - 4, 4, "XXXX");
  { std::ofstream(pool, std::ios::binary | std::ios::trunc) << image; }
  CmdRun serve_bad = run_wort("serve --pool " + pool + " --check");
  EXPECT_EQ(serve_bad.status, 1) << serve_bad.out;
  std::ofstream(pool, std::ios::binary | std::ios::trunc) << image;  // serve --check wrote
  CmdRun bad = run_wort("check " + pool);
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("DAMAGED"), std::string::npos) << bad.out;
  EXPECT_EQ(run_wort("dump " + pool).status, 1);
  std::remove(pool.c_str());
}

INSTANTIATE_TEST_SUITE_P(EveryServableIndex, CheckServerPool,
                         ::testing::Values("wort", "woart", "artcow", "fastfair", "fptree",
                                           "wbtree", "nvtree", "roart"),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, CheckCmd,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
