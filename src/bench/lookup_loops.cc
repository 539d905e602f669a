#include "bench/lookup_loops.h"

#include <map>
#include <mutex>
#include <string>

#include "baseline/art/art_tree.h"
#include "index/artcow/artcow.h"
#include "index/fastfair/fastfair_tree.h"
#include "index/fptree/fptree_tree.h"
#include "index/nvtree/nvtree_tree.h"
#include "index/roart/roart_tree.h"
#include "index/wbtree/wbtree_tree.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"

namespace wort::bench {
namespace {

struct Table {
  std::mutex mu;
  std::map<std::string, ConcreteLookups, std::less<>> by_kind;
};

//! The tree's own kinds, then whatever WORT_BENCH_LOOKUPS adds (a test's toy index).
Table& table() {
  static Table t{{},
                 {{std::string(WortTree::kKind), concrete_lookups_of<WortTree>()},
                  {std::string(woart::Woart::kKind), concrete_lookups_of<woart::Woart>()},
                  {std::string(artcow::ArtCow::kKind), concrete_lookups_of<artcow::ArtCow>()},
                  {std::string(roart::Roart::kKind), concrete_lookups_of<roart::Roart>()},
                  {std::string(FPTree::kKind), concrete_lookups_of<FPTree>()},
                  {std::string(FastFairTree::kKind), concrete_lookups_of<FastFairTree>()},
                  {std::string(WbTree::kKind), concrete_lookups_of<WbTree>()},
                  {std::string(NvTree::kKind), concrete_lookups_of<NvTree>()},
                  {std::string(art::VolatileArt::kKind), concrete_lookups_of<art::VolatileArt>()}}};
  return t;
}

}  // namespace

const ConcreteLookups* concrete_lookups(std::string_view kind) {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  const auto it = t.by_kind.find(kind);
  return it == t.by_kind.end() ? nullptr : &it->second;
}

void add_concrete_lookups(std::string_view kind, ConcreteLookups l) {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  t.by_kind.emplace(std::string(kind), l);
}

}  // namespace wort::bench
