#include "support/crash_ops.h"

#include <iostream>
#include <random>

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
