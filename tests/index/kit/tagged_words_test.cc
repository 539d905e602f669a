// Generation-tagged words from the future: for every registered persistent index, a pool
// whose lock words, obsolete marks and metadata generations (the words tagged with the
// pool's open generation: index/kit/gen_lock.h) are rewritten to carry the generation the
// next open will take — held, or marked obsolete — must be refused by that open (corrupt).
// Opened, such a word is a lock nobody releases (every writer that reached it spun forever,
// and ROART's readers too: the session-18 audit's crafted pool), an obsolete mark that sends
// every writer back to the root, or node metadata taken as current.
//
// The words are found by their value: the writing session runs at a distinctive generation
// (the header's generation word is not under its checksum), so a word whose tag is that
// generation is one of them. Two writers on disjoint keys, so that every index that locks
// takes its locks (a lone writer may skip them).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "index/kit/kit_support.h"
#include "pm/pool_layout.h"

namespace wort {
namespace {

using kittest::key_of;

std::vector<char> slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void spill(const std::string& p, const std::vector<char>& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class TaggedWords : public ::testing::TestWithParam<std::string> {};

TEST_P(TaggedWords, WordsTaggedWithTheNextOpensGenerationAreRefusedAtOpen) {
  const std::string kind = GetParam();
  kittest::TempPath path(kind + "-tagged");
  {
    PoolOptions o;
    o.size = 8u << 20;
    o.kind = kind;
    ASSERT_TRUE(Pool::create(path.str(), o));
  }
  // The next open takes kBase + step: a generation no small field of the tree equals.
  constexpr std::uint64_t kBase = 0x2b5a5a5a5;
  {
    std::vector<char> img = slurp(path.str());
    std::memcpy(&img[offsetof(pm::PoolHeader, generation)], &kBase, 8);
    spill(path.str(), img);
  }
  std::uint64_t g = 0;
  std::vector<std::uint64_t> reachable;  // the tree's blocks at the end of the session
  {
    auto pool = Pool::open(path.str());
    ASSERT_TRUE(pool) << pool.error().message;
    g = (*pool)->generation();
    ASSERT_EQ(g, kBase + pm::kGenerationStep);
    auto ix = Index::create(**pool, kind);
    ASSERT_TRUE(ix) << ix.error().message;
    const bool threads = (*ix)->kind() != "wbtree" && (*ix)->kind() != "nvtree";
    std::atomic<int> ready{0};
    auto work = [&](int t) {
      for (int i = 0; i < 3000; ++i) {
        // Both writers under way (each has written once, so holds its thread id) before
        // either goes on: a writer alone in the process takes no lock.
        if (i == 1) {
          ++ready;
          while (threads && ready.load() < 2) std::this_thread::yield();
        }
        const std::string k =  // >= 16 bytes: no leaf's key_len word looks like a node type
            "tagged-key-" + std::to_string(t) + ":" + std::to_string(i * 7919 % 3000);
        ASSERT_EQ((*ix)->insert(key_of(k), (std::uint64_t{1} << 60) | i), Status::ok);
        if (i % 5 == 0) {
          ASSERT_EQ((*ix)->remove(key_of(k)), Status::ok);
        }
      }
    };
    if (threads) {
      std::thread a(work, 0), b(work, 1);
      a.join();
      b.join();
    } else {
      work(0);
    }
    ASSERT_TRUE((*ix)->visit_blocks([&](std::uint64_t off) { reachable.push_back(off); }));
  }
  // Rewrite every word tagged with g to the next open's generation, held / obsolete.
  const std::uint64_t next = g + pm::kGenerationStep;
  std::vector<char> img = slurp(path.str());
  std::size_t lock_words = 0, marks = 0, metadata = 0;
  std::uint64_t first = 0;  // the chunk area: the header and chunk table stay as they are
  std::memcpy(&first, &img[offsetof(pm::PoolHeader, first_chunk_offset)], 8);
  for (std::size_t at = first; at + 8 <= img.size(); at += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, &img[at], 8);
    if (w >> 2 == g) {  // a kit::gen_lock word (locked 1, obsolete 2)
      w = next << 2 | 1;
      ++lock_words;
    } else if (w >> 10 == g) {  // the ART engine's obsolete mark (art_engine/node_lock.h)
      w = next << 10 | 0x200 | (w & 0xff);
      ++marks;
    } else if (w == g) {  // ROART's node metadata generation
      w = next;
      ++metadata;
    } else {
      continue;
    }
    std::memcpy(&img[at], &w, 8);
  }
  // The ART engine's nodes (woart, artcow) carry a mark only once unlinked: a node in the
  // tree holds just its type byte (1..6, the word at offset 8). Marked obsolete in the next
  // open's generation, it would send every writer that takes it back to the root forever.
  if (kind == "woart" || kind == "artcow")
    for (std::uint64_t b : reachable) {
      std::uint64_t w = 0;
      std::memcpy(&w, &img[b + 8], 8);
      if (w < 1 || w > 6) continue;  // a leaf (its key_len word), or the anchor
      w = next << 10 | 0x200 | w;
      std::memcpy(&img[b + 8], &w, 8);
      ++marks;
    }
  std::printf("%s: %zu lock words, %zu obsolete marks, %zu metadata generations rewritten\n",
              kind.c_str(), lock_words, marks, metadata);
  if (lock_words + marks + metadata == 0) {
    EXPECT_TRUE(kind == "wbtree" || kind == "nvtree")
        << kind << " left no word tagged with its generation: the test shows nothing";
    return;
  }
  spill(path.str(), img);
  auto pool = Pool::open(path.str());
  ASSERT_TRUE(pool) << pool.error().message;
  ASSERT_EQ((*pool)->generation(), next);
  auto ix = Index::open(**pool);
  ASSERT_FALSE(ix) << kind << ": opened a tree whose words carry this open's generation";
  EXPECT_EQ(ix.error().code, Status::corrupt) << ix.error().message;
  EXPECT_NE(ix.error().message.find("this open's"), std::string::npos) << ix.error().message;
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, TaggedWords,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
