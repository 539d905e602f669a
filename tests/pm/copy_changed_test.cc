// pm::copy_changed (a new node writes back only the lines that differ from its image) and
// the simulator's check of the assumption it rests on: a line skipped because memory
// already holds the image's bytes must have no store still waiting for its write-back
// (lint ASSUMED_DURABLE). Shown both ways: a clean skip raises nothing; a skip over an
// unflushed store of the same bytes is caught.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "crashsim/simulator.h"
#include "pm/persist.h"

namespace wort::test {
namespace {

struct Traced {
  std::byte* mem = static_cast<std::byte*>(std::aligned_alloc(64, 4096));
  crashsim::Simulator sim;
  std::vector<std::string> lints;
  pm::Tracer* prev = nullptr;

  Traced() {
    std::memset(mem, 0, 4096);
    sim.watch(mem, 4096, 4096);
    sim.set_lint_handler([&](crashsim::Lint l, std::size_t, std::uintptr_t, const std::string& d) {
      lints.push_back(std::string(crashsim::lint_name(l)) + ": " + d);
    });
    prev = pm::set_tracer(&sim);
  }
  ~Traced() {
    pm::set_tracer(prev);
    std::free(mem);
  }
  bool has(std::string_view kind) const {
    for (const auto& l : lints)
      if (l.starts_with(kind)) return true;
    return false;
  }
};

TEST(CopyChanged, WritesBackOnlyTheLinesThatDiffer) {
  alignas(64) std::byte mem[256] = {};
  alignas(64) std::byte image[256] = {};
  image[3] = std::byte{1};    // line 0
  image[200] = std::byte{2};  // line 3
  pm::reset_counters();
  pm::copy_changed(mem, image, sizeof image);
  EXPECT_EQ(std::memcmp(mem, image, sizeof image), 0);
  EXPECT_EQ(pm::counters().lines_flushed, 2u) << "lines 1 and 2 already hold the image";
  EXPECT_EQ(pm::counters().flushes, 2u) << "two separate runs of lines";
  // A block holding other bytes (a reused block) is written where it differs, in one run.
  std::memset(mem, 0xab, sizeof mem);
  pm::reset_counters();
  pm::copy_changed(mem, image, sizeof image);
  EXPECT_EQ(std::memcmp(mem, image, sizeof image), 0);
  EXPECT_EQ(pm::counters().lines_flushed, 4u);
  EXPECT_EQ(pm::counters().flushes, 1u);
  // A range that starts and ends inside lines compares only its own bytes.
  std::memset(mem, 0, sizeof mem);
  mem[0] = std::byte{9};  // outside the range: not compared, not changed
  pm::reset_counters();
  pm::copy_changed(mem + 16, image + 16, 100);
  EXPECT_EQ(mem[0], std::byte{9});
  EXPECT_EQ(pm::counters().lines_flushed, 0u) << "image[16, 116) is zero, as is mem there";
}

TEST(CopyChanged, SkippingDurableLinesRaisesNoLint) {
  Traced t;
  std::byte image[192] = {};
  image[0] = std::byte{7};
  pm::copy_changed(t.mem + 64, image, sizeof image);
  pm::fence();
  t.sim.acknowledge();
  EXPECT_TRUE(t.lints.empty()) << t.lints.front();
}

// The broken variant: the line already holds the image's bytes in memory, but only because
// a store put them there and nobody wrote it back. Skipping it leaves the durable line stale.
TEST(CopyChanged, SkippingALineWithAnUnflushedStoreIsCaught) {
  Traced t;
  std::uint64_t v = 42;
  pm::store(reinterpret_cast<std::uint64_t*>(t.mem + 128), v);  // not flushed
  std::byte image[192] = {};
  std::memcpy(image + 64, &v, sizeof v);
  pm::copy_changed(t.mem + 64, image, sizeof image);
  EXPECT_TRUE(t.has("ASSUMED_DURABLE")) << (t.lints.empty() ? "no lint" : t.lints.front());
}

}  // namespace
}  // namespace wort::test
