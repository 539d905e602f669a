// tests/crashsim/px86_test.cc — the Px86 model on its own: store logs per line, flush marks,
// fences, non-temporal stores, crash images as per-line prefixes, image counts; then the
// image selection of a crash point and the replay text.
#include "crashsim/px86.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "crashsim/replay.h"
#include "crashsim/simulator.h"

namespace wort::crashsim {
namespace {

constexpr std::size_t kSize = 8 * kLine;

struct ModelTest : ::testing::Test {
  ModelTest() : mem(kSize, std::byte{0}) { m.reset(mem.data(), kSize, 0); }

  void store64(std::size_t off, std::uint64_t v) { m.store(off, &v, sizeof v); }
  static std::uint64_t word(const std::vector<std::byte>& img, std::size_t off) {
    std::uint64_t v;
    std::memcpy(&v, img.data() + off, sizeof v);
    return v;
  }
  std::vector<std::byte> image(std::vector<std::uint32_t> choice) {
    std::vector<std::byte> out(kSize, std::byte{0xee});
    EXPECT_TRUE(m.build_image(choice, out.data(), kSize));
    return out;
  }

  std::vector<std::byte> mem;
  Px86Model m;
};

// pm::store_volatile (metadata rebuilt after a restart): in the log like any store, so a
// crash image may keep it or not, but it asks for no flush.
TEST_F(ModelTest, VolatileStoreIsLoggedButNeedsNoFlush) {
  std::uint64_t v = 7;
  m.store(kLine, &v, sizeof v, /*needs_flush=*/false);
  EXPECT_EQ(m.dirty_lines(), 1u);
  EXPECT_EQ(m.image_count(), 2u);
  EXPECT_EQ(word(image({0}), kLine), 0u);
  EXPECT_EQ(word(image({1}), kLine), 7u);
  EXPECT_EQ(m.first_unflushed(), SIZE_MAX);
  EXPECT_EQ(m.unflushed_lines(), 0u);
  // An ordinary store after it in the same line still needs its flush.
  store64(kLine + 8, 9);
  EXPECT_EQ(m.first_unflushed(), kLine);
  EXPECT_EQ(m.unflushed_lines(), 1u);
}

TEST_F(ModelTest, StoresStayVolatileUntilFlushAndFence) {
  store64(0, 1);
  store64(8, 2);
  EXPECT_EQ(m.dirty_lines(), 1u);
  EXPECT_EQ(m.choice_limits(), (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(m.image_count(), 3u);  // prefixes of length 0, 1, 2
  // A fence without a flush orders nothing.
  EXPECT_FALSE(m.fence());
  EXPECT_EQ(m.image_count(), 3u);
  EXPECT_EQ(word(std::vector<std::byte>(m.durable(), m.durable() + kSize), 0), 0u);
  // Prefix semantics: the second store never survives without the first.
  auto p1 = image({1});
  EXPECT_EQ(word(p1, 0), 1u);
  EXPECT_EQ(word(p1, 8), 0u);
  auto p2 = image({2});
  EXPECT_EQ(word(p2, 0), 1u);
  EXPECT_EQ(word(p2, 8), 2u);
  EXPECT_EQ(m.first_unflushed(), 0u);
  EXPECT_EQ(m.unflushed_lines(), 1u);
  EXPECT_EQ(m.unfenced_lines(), 0u);
}

TEST_F(ModelTest, FlushMarksAndFenceMakesDurableUpToTheMark) {
  store64(0, 1);
  auto fr = m.flush(0, 8);
  EXPECT_EQ(fr.lines, 1u);
  EXPECT_EQ(fr.redundant_lines, 0u);
  store64(8, 2);  // after the mark: not covered by the coming fence
  EXPECT_EQ(m.unfenced_lines(), 1u);
  EXPECT_EQ(m.unflushed_lines(), 1u);
  // Before the fence both stores may or may not be there.
  EXPECT_EQ(m.image_count(), 3u);
  EXPECT_TRUE(m.fence());
  // The first store is durable now; only the second remains in the log.
  EXPECT_EQ(m.dirty_lines(), 1u);
  EXPECT_EQ(m.choice_limits(), (std::vector<std::uint32_t>{1}));
  auto none = image({0});
  EXPECT_EQ(word(none, 0), 1u);
  EXPECT_EQ(word(none, 8), 0u);
  EXPECT_EQ(m.unfenced_lines(), 0u);
  m.flush(8, 8);
  EXPECT_TRUE(m.fence());
  EXPECT_EQ(m.dirty_lines(), 0u);
  EXPECT_EQ(m.image_count(), 1u);
  EXPECT_EQ(word(image({}), 8), 2u);
}

TEST_F(ModelTest, LinesAreIndependent) {
  store64(0, 1);
  store64(kLine, 2);
  store64(3 * kLine + 8, 3);
  store64(3 * kLine + 16, 4);
  EXPECT_EQ(m.dirty_lines(), 3u);
  EXPECT_EQ(m.choice_limits(), (std::vector<std::uint32_t>{1, 1, 2}));
  EXPECT_EQ(m.image_count(), 2u * 2u * 3u);
  // A later line survives while an earlier one is lost: no order across lines.
  auto img = image({0, 1, 1});
  EXPECT_EQ(word(img, 0), 0u);
  EXPECT_EQ(word(img, kLine), 2u);
  EXPECT_EQ(word(img, 3 * kLine + 8), 3u);
  EXPECT_EQ(word(img, 3 * kLine + 16), 0u);
  // Bytes outside the dirty lines come from the durable image, not from old buffer content.
  EXPECT_EQ(img[5 * kLine], std::byte{0});
}

TEST_F(ModelTest, FlushOfOneLineDoesNotOrderAnother) {
  store64(0, 1);
  store64(kLine, 2);
  m.flush(0, 8);
  EXPECT_TRUE(m.fence());
  EXPECT_EQ(m.choice_limits(), (std::vector<std::uint32_t>{1}));
  auto img = image({0});
  EXPECT_EQ(word(img, 0), 1u);
  EXPECT_EQ(word(img, kLine), 0u);
}

TEST_F(ModelTest, MultiLineStoreSplitsPerLineAndFlushCoversEveryLine) {
  std::vector<std::byte> blob(2 * kLine + 16, std::byte{7});
  m.store(kLine - 8, blob.data(), blob.size());  // lines 0, 1, 2, 3
  EXPECT_EQ(m.dirty_lines(), 4u);
  EXPECT_EQ(m.extent(), kLine - 8 + blob.size());
  auto fr = m.flush(kLine - 8, blob.size());
  EXPECT_EQ(fr.lines, 4u);
  EXPECT_EQ(fr.redundant_lines, 0u);
  EXPECT_TRUE(m.fence());
  EXPECT_EQ(m.dirty_lines(), 0u);
  EXPECT_EQ(m.durable()[kLine - 8], std::byte{7});
  EXPECT_EQ(m.durable()[3 * kLine + 7], std::byte{7});
  EXPECT_EQ(m.durable()[3 * kLine + 8], std::byte{0});
}

TEST_F(ModelTest, NonTemporalStoreIsDurableAtTheNextFenceWithoutFlush) {
  m.nt_store(2 * kLine, 42);
  EXPECT_EQ(m.unflushed_lines(), 0u);
  EXPECT_EQ(m.unfenced_lines(), 1u);
  EXPECT_EQ(m.image_count(), 2u);
  // A flush after it has nothing new to write back.
  EXPECT_EQ(m.flush(2 * kLine, 8).redundant_lines, 1u);
  EXPECT_TRUE(m.fence());
  EXPECT_EQ(m.dirty_lines(), 0u);
  EXPECT_EQ(word(image({}), 2 * kLine), 42u);
}

TEST_F(ModelTest, RedundantFlushAndFenceAreReported) {
  // Clean line: nothing to write back.
  auto fr = m.flush(0, 8);
  EXPECT_EQ(fr.redundant_lines, 1u);
  EXPECT_EQ(fr.first_redundant, 0u);
  EXPECT_FALSE(m.fence());
  store64(kLine, 5);
  EXPECT_EQ(m.flush(kLine, 8).redundant_lines, 0u);
  // Second flush with no store since the mark.
  EXPECT_EQ(m.flush(kLine, 8).redundant_lines, 1u);
  // A flush spanning a written and an unwritten line reports only the unwritten one.
  store64(kLine, 6);
  fr = m.flush(kLine, 2 * kLine);
  EXPECT_EQ(fr.lines, 2u);
  EXPECT_EQ(fr.redundant_lines, 1u);
  EXPECT_EQ(fr.first_redundant, 2 * kLine);
  EXPECT_TRUE(m.fence());
  EXPECT_FALSE(m.fence());
}

TEST_F(ModelTest, BuildImageRejectsAChoiceThatDoesNotFit) {
  store64(0, 1);
  std::vector<std::byte> out(kSize);
  std::vector<std::uint32_t> wrong_len{0, 0};
  std::vector<std::uint32_t> too_long{2};
  EXPECT_FALSE(m.build_image(wrong_len, out.data(), kSize));
  EXPECT_FALSE(m.build_image(too_long, out.data(), kSize));
}

TEST_F(ModelTest, ImageCountSaturates) {
  // 64 lines with 63 stores each: 64^64 overflows 64 bits.
  std::vector<std::byte> big(64 * kLine, std::byte{0});
  Px86Model b;
  b.reset(big.data(), big.size(), 0);
  for (std::size_t line = 0; line < 64; ++line)
    for (std::uint8_t i = 0; i < 63; ++i) b.store(line * kLine + i, &i, 1);
  EXPECT_EQ(b.image_count(), UINT64_MAX);
}

TEST_F(ModelTest, ResetStartsFromGivenContentsAndClearsOldBytes) {
  store64(4 * kLine, 9);
  std::vector<std::byte> init(kSize, std::byte{0});
  init[3] = std::byte{1};
  m.reset(init.data(), kSize, 8);
  EXPECT_EQ(m.dirty_lines(), 0u);
  EXPECT_EQ(m.durable()[3], std::byte{1});
  EXPECT_EQ(m.durable()[4 * kLine], std::byte{0});  // the old store is gone
  EXPECT_EQ(m.shadow()[4 * kLine], std::byte{0});
}

TEST_F(ModelTest, AbsorbTakesUntrackedBytesAsDurable) {
  std::byte b{3};
  m.absorb(100, &b, 1);
  EXPECT_EQ(m.shadow()[100], b);
  EXPECT_EQ(m.durable()[100], b);
  EXPECT_EQ(m.dirty_lines(), 0u);
}

}  // namespace
}  // namespace wort::crashsim

// ---- image selection and replay text (simulator.h, replay.h) --------------------------

namespace wort::crashsim {
namespace {

std::vector<std::vector<std::uint32_t>> selected(std::vector<std::uint32_t> limits,
                                                 std::size_t cap, std::size_t samples) {
  std::vector<std::vector<std::uint32_t>> out;
  select_images(limits, cap, samples, 7, [&](std::span<const std::uint32_t> c) {
    out.emplace_back(c.begin(), c.end());
  });
  return out;
}

TEST(SelectImages, EnumeratesEveryImageUpToTheCap) {
  const auto all = selected({2, 1, 3}, 64, 8);
  EXPECT_EQ(all.size(), 3u * 2u * 4u);
  std::set<std::vector<std::uint32_t>> distinct(all.begin(), all.end());
  EXPECT_EQ(distinct.size(), all.size());
  for (const auto& c : all) {
    EXPECT_LE(c[0], 2u);
    EXPECT_LE(c[1], 1u);
    EXPECT_LE(c[2], 3u);
  }
  // No dirty line: the one image of the durable state.
  EXPECT_EQ(selected({}, 64, 8).size(), 1u);
}

TEST(SelectImages, AboveTheCapPicksStructuredAndRandomImages) {
  const std::vector<std::uint32_t> limits{3, 3, 3, 3, 3};  // 1024 images
  const auto picked = selected(limits, 64, 0);
  std::set<std::vector<std::uint32_t>> got(picked.begin(), picked.end());
  EXPECT_EQ(got.size(), picked.size()) << "duplicates are skipped";
  // nothing extra, everything, 5 singles, 10 pairs
  EXPECT_EQ(picked.size(), 1u + 1u + 5u + 10u);
  EXPECT_TRUE(got.count({0, 0, 0, 0, 0}));
  EXPECT_TRUE(got.count({3, 3, 3, 3, 3}));
  EXPECT_TRUE(got.count({0, 0, 3, 0, 0}));
  EXPECT_TRUE(got.count({3, 0, 0, 0, 3}));
  // Random picks come on top, seeded: the same seed gives the same images.
  const auto with_random = selected(limits, 64, 8);
  EXPECT_GT(with_random.size(), picked.size());
  EXPECT_LE(with_random.size(), picked.size() + 8);
  EXPECT_EQ(with_random, selected(limits, 64, 8));
}

TEST(Replay, RoundTripsAndRejectsMalformedStrings) {
  ReplaySpec r;
  std::string err;
  ASSERT_TRUE(parse_replay("seed=9,op=3,point=41,choice=0.2.1,rpoint=2,rchoice=none", &r, &err))
      << err;
  EXPECT_EQ(r.seed, 9u);
  EXPECT_EQ(r.point, 41u);
  EXPECT_TRUE(r.nested);
  EXPECT_EQ(r.rpoint, 2u);
  std::vector<std::uint32_t> limits{1, 2, 3}, c;
  ASSERT_TRUE(resolve_choice(r.choice, limits, &c));
  EXPECT_EQ(c, (std::vector<std::uint32_t>{0, 2, 1}));
  EXPECT_EQ(format_choice(c), "0.2.1");
  ASSERT_TRUE(resolve_choice("all", limits, &c));
  EXPECT_EQ(c, limits);
  ASSERT_TRUE(resolve_choice("none", limits, &c));
  EXPECT_EQ(c, (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_TRUE(resolve_choice("-", {}, &c));
  EXPECT_EQ(format_choice(c), "-");
  EXPECT_FALSE(resolve_choice("0.3.0", limits, &c)) << "3 exceeds the second line's log";
  EXPECT_FALSE(resolve_choice("0.1", limits, &c)) << "wrong number of lines";

  EXPECT_FALSE(parse_replay("point=1", &r, &err));
  EXPECT_FALSE(parse_replay("point=x,choice=0", &r, &err));
  EXPECT_FALSE(parse_replay("point=1,choice=0,bogus=2", &r, &err));
  EXPECT_FALSE(parse_replay("point=1,choice=0,rpoint=1", &r, &err));
}

}  // namespace
}  // namespace wort::crashsim
