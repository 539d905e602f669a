// cli/list_cmd.cc — `wort list`: what this build can run.
#include <cstdio>

#include "bench/keygen.h"
#include "bench/workload.h"
#include "cli/commands.h"
#include "index/registry.h"
#include "wort/index.h"

namespace wort::cli {

int list_main(const Args&) {
  std::puts("indexes:");
  for (const registry::Entry* e : registry::all())
    std::printf("  %-10s %s, keys up to %zu bytes, %s\n", e->name.c_str(),
                e->persistent ? "persistent" : "volatile (file pools refuse it)", e->max_key_size,
                e->concurrent ? "concurrent (threads call it at once)"
                              : "serialised (threads share a handle, one writer at a time)");
  std::puts("key distributions (--dist):");
  for (auto d : {bench::KeyDist::dense, bench::KeyDist::sparse, bench::KeyDist::clustered,
                 bench::KeyDist::varbytes, bench::KeyDist::words, bench::KeyDist::email,
                 bench::KeyDist::fixed20})
    std::printf("  %s\n", std::string(bench::to_string(d)).c_str());
  std::puts("workloads (--workload):");
  std::puts("  paper                insert N keys, search them, range queries (WORT Figs. 7-10)");
  for (const auto& p : bench::presets())
    std::printf("  %-20s %s\n", std::string(p.name).c_str(), std::string(p.what).c_str());
  std::puts("  mix                  your own ratios with --mix");
  return 0;
}

}  // namespace wort::cli
