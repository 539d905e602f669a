#include "support/crash_ops.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>

#include "crashsim/oracles.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "pm/tracer.h"
#include "support/keygen.h"

namespace wort::test {

std::optional<crashsim::CommitTable> commit_table_for(std::string_view kind) {
  if (kind == "wort" || kind == "woart" || kind == "artcow" || kind == "toy_hash")
    return kOneCommitPerChange;
  if (kind == "fastfair") return kFastFairCommits;
  if (kind == "roart") return kRoartCommits;
  // wB+Tree, NV-Tree, FPTree: one commit per change (a bitmap, count, link or value word);
  // splits, micro-log words, root growth/collapse and the spare leaf are structural stores
  // (the "Commit store" tables of src/index/{wbtree,nvtree,fptree}/README.md).
  if (kind == "wbtree" || kind == "nvtree" || kind == "fptree") return kOneCommitPerChange;
  return std::nullopt;
}

crashsim::Report run_and_print(const crashsim::Factory& tree,
                               const std::vector<crashsim::KvOp>& setup,
                               const std::vector<crashsim::KvOp>& ops, const crashsim::Options& opts) {
  crashsim::Options o = opts;
  if (!o.commits) o.commits = commit_table_for(tree.kind);
  auto r = crashsim::run_kv(tree, setup, ops, o);
  std::cout << "[" << tree.kind << " crash] " << r.summary() << "\n";
  return r;
}

namespace {

//! Records each 8-byte commit store: the word before it, and after it as the commit's fence
//! finds it (not the store itself: a commit made by other stores, as a mutant splitting it
//! into two halves does, is recorded the same).
class CommitWords final : public pm::Tracer {
 public:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;  // (before, after)

  void on_commit(void* dst, std::size_t len, bool) override {
    finish();
    if (len != sizeof(std::uint64_t)) return;
    pending_ = dst;
    std::memcpy(&before_, dst, sizeof before_);
  }
  void on_store(void*, const void*, std::size_t) override {}
  void on_nt_store(void*, std::uint64_t) override {}
  void on_flush(const void*, std::size_t) override {}
  void on_fence() override { finish(); }
  //! Records the pending commit's word as it is now.
  void finish() {
    if (pending_ == nullptr) return;
    std::uint64_t after;
    std::memcpy(&after, pending_, sizeof after);
    words.emplace_back(before_, after);
    pending_ = nullptr;
  }

 private:
  void* pending_ = nullptr;
  std::uint64_t before_ = 0;
};

}  // namespace

std::vector<std::uint64_t> commit_split_points(const crashsim::Factory& tree,
                                               const std::vector<crashsim::KvOp>& setup,
                                               const std::vector<crashsim::KvOp>& ops,
                                               const crashsim::Options& o) {
  PoolOptions po;
  po.size = o.pool_size;
  po.chunk_size = o.chunk_size;
  po.kind = tree.kind;
  po.values_are_blocks = o.values_are_blocks;
  auto pool = Pool::create_in_memory(po);
  if (!pool) return {};
  CommitWords commits;
  {
    auto ix = tree.create(**pool);
    if (!ix) return {};
    for (const crashsim::KvOp& op : setup) (void)crashsim::apply_op(**ix, op);
    pm::Tracer* prev = pm::set_tracer(&commits);
    for (const crashsim::KvOp& op : ops) (void)crashsim::apply_op(**ix, op);
    pm::set_tracer(prev);
    commits.finish();
  }
  const std::uint64_t first = (*pool)->header().first_chunk_offset, end = (*pool)->size();
  // The block a word names, if any: its low 48 bits (tagged words keep flags and key bytes
  // above them, tags below 64) rounded down to a line, inside the chunk area.
  auto block = [&](std::uint64_t w) -> std::optional<std::uint64_t> {
    const std::uint64_t x = w & 0x0000'ffff'ffff'ffc0ull;
    if (x < first || x >= end) return std::nullopt;
    return x - first;
  };
  std::vector<std::uint64_t> points;
  for (const auto& [before, after] : commits.words) {
    const auto b = block(before), a = block(after);
    if (b && a && *a != *b) points.push_back(std::max(*a, *b));
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

std::vector<crashsim::Report> run_above_4gib(const crashsim::Factory& tree,
                                             const std::vector<crashsim::KvOp>& setup,
                                             const std::vector<crashsim::KvOp>& ops,
                                             const crashsim::Options& o) {
  std::vector<std::uint64_t> below = {0};
  const auto points = commit_split_points(tree, setup, ops, o);
  // At most kMaxSplits of them, spread over the list: each is a whole crash run. Under
  // AddressSanitizer (there for memory errors on the recovery paths, at 10-20x the cost of
  // an image) one split and the sampled image selection (sanitizer_sample).
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::size_t kMaxSplits = 1;
#else
  constexpr std::size_t kMaxSplits = 4;
#endif
  for (std::size_t i = 0; i < points.size() && i < kMaxSplits; ++i)
    below.push_back(points[i * points.size() / std::min(points.size(), kMaxSplits)]);
  below.erase(std::unique(below.begin(), below.end()), below.end());
  std::vector<crashsim::Report> out;
  for (std::uint64_t bytes_below : below) {
    std::cout << "[" << tree.kind << " above 4 GiB] " << bytes_below
              << " byte(s) of chunks below 2^32\n";
    out.push_back(run_and_print(tree, setup, ops, sanitizer_sample(above_4gib(o, bytes_below))));
  }
  return out;
}

crashsim::Report run_concurrent_and_print(const crashsim::Factory& tree,
                                          const std::vector<crashsim::KvOp>& setup,
                                          const std::vector<std::vector<crashsim::KvOp>>& threads,
                                          const crashsim::Options& opts,
                                          const crashsim::ScheduleOptions& s) {
  crashsim::Options o = opts;
  if (!o.commits) o.commits = commit_table_for(tree.kind);
  auto r = crashsim::run_concurrent_kv(tree, setup, threads, o, s);
  std::cout << "[" << tree.kind << " concurrent crash] seed " << o.seed << ": " << r.summary()
            << "\n";
  return r;
}

MixedBatch long_key_batch(std::size_t setup_n) {
  const std::vector<std::string> keys = make_keys(Gen::long_keys, 12, 13);
  MixedBatch b;
  for (std::size_t i = 0; i < setup_n; ++i) b.setup.push_back(ins(keys[i], i));
  for (std::size_t i = setup_n; i < setup_n + 4; ++i) b.ops.push_back(ins(keys[i], i));
  b.ops.push_back(rem(keys[1]));
  b.ops.push_back(ups(keys[7], 70));
  return b;
}

MixedBatch sampled_mix(const std::vector<std::string>& keys, std::size_t setup_n,
                       std::size_t ops_n) {
  MixedBatch b;
  for (std::size_t i = 0; i < setup_n; ++i) b.setup.push_back(ins(keys[i], i));
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < ops_n; ++i) {
    const std::string& k = keys[rng() % keys.size()];
    switch (rng() % 4) {
      case 0: b.ops.push_back(ins(k, i)); break;
      case 1: b.ops.push_back(ups(k, i)); break;
      default: b.ops.push_back(rem(k)); break;
    }
  }
  return b;
}

std::vector<crashsim::KvOp> inserts(std::uint64_t from, std::uint64_t n, std::uint64_t step) {
  std::vector<crashsim::KvOp> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(ins(u64_str(from + i * step), from + i * step));
  return v;
}

void expect_clean_sampled_mixes(const crashsim::Factory& tree, std::size_t keys,
                                std::size_t setup_n, std::size_t ops_n) {
  for (Gen g : {Gen::random_u64, Gen::shared_prefix, Gen::prefix_chains}) {
    SCOPED_TRACE(std::string(to_string(g)));
    const MixedBatch b = sampled_mix(make_keys(g, keys, 11), setup_n, ops_n);
    crashsim::Options o;
    o.drain = true;  // after removing every key, no block beyond an empty tree's remains
    o.seed = 3;
    o.pool_size = 4u << 20;
    o.exhaustive_cap = 16;
    o.random_samples = 4;
    EXPECT_CLEAN(run_and_print(tree, b.setup, b.ops, sanitizer_sample(o)));
  }
}

namespace {
constexpr std::uint64_t kSplitA = 0xabcdef0123456700ull, kSplitB = 0xabcdef0123456711ull;
}  // namespace

std::vector<crashsim::KvOp> split_and_merge_setup() {
  return {ins(u64_str(kSplitA)), ins(u64_str(kSplitB))};
}

std::vector<crashsim::KvOp> split_and_merge_ops() {
  return {ins(u64_str(0xab00000000000000ull), 1), ins(u64_str(kSplitA + 2), 2),
          ups(u64_str(kSplitA), 3),                rem(u64_str(0xab00000000000000ull)),
          rem(u64_str(kSplitB)),                   ins(u64_str(0xabcdef0000000000ull), 4)};
}

}  // namespace wort::test
