// `wort check` and `wort dump` on a pool wort::Store wrote: called sound (exit 0) and checked
// through the store (the index, every value's checksum, the values' blocks in the audit);
// one flipped byte of a value called damaged (exit 1, corrupt), by check and by dump. (A pool
// `wort serve` wrote stays checked as the server's: tests/index/kit/check_cmd_test.cc.)
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/wort_cmd.h"
#include "wort/store.h"

namespace wort::test {
namespace {

class CheckStorePool : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckStorePool, SoundThenOneValueByteFlippedIsDamaged) {
  const std::string kind = GetParam();
  const std::string pool = (std::filesystem::temp_directory_path() /
                            ("wort-check-store-" + std::to_string(::getpid()) + "-" + kind))
                               .string();
  std::remove(pool.c_str());
  {
    StoreOptions o;
    o.kind = kind;
    o.size = 8 << 20;
    auto db = Store::open(pool, o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    for (int i = 0; i < 100; ++i)
      ASSERT_EQ((*db)->put("key" + std::to_string(i), "value-" + std::to_string(i) + "-of-store"),
                Status::ok);
    auto removed = (*db)->remove("key99");
    ASSERT_TRUE(removed.ok() && *removed);
  }
  const std::string before = slurp(pool);
  CmdRun check = run_wort("check " + pool);
  EXPECT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("OK: " + kind + " pool"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("a wort::Store pool: 99 values"), std::string::npos) << check.out;
  EXPECT_EQ(slurp(pool), before) << "wort check wrote to the pool file";
  CmdRun value = run_wort("dump " + pool + " key7");
  EXPECT_EQ(value.status, 0) << value.out;
  EXPECT_EQ(value.out, "value-7-of-store\n");
  EXPECT_EQ(run_wort("dump " + pool + " key99").status, 3);
  EXPECT_EQ(run_wort("dump " + pool).status, 0);

  // One byte of key7's value flipped (a value blob: header, CRC-32C, the key, the value).
  std::string image = before;
  const std::size_t at = image.find("key7value-7-of-store");
  ASSERT_NE(at, std::string::npos) << "key7's blob is not in the pool file";
  image[at + 10] ^= 0x01;
  { std::ofstream(pool, std::ios::binary | std::ios::trunc) << image; }
  CmdRun bad = run_wort("check " + pool);
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("DAMAGED"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("corrupt"), std::string::npos) << bad.out;
  EXPECT_EQ(run_wort("dump " + pool).status, 1);
  EXPECT_EQ(run_wort("dump " + pool + " key7").status, 1);
  EXPECT_EQ(slurp(pool), image) << "wort check wrote to the pool file";
  std::remove(pool.c_str());
}

INSTANTIATE_TEST_SUITE_P(SomeKinds, CheckStorePool,
                         ::testing::Values("wort", "fastfair", "fptree", "wbtree"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort::test
