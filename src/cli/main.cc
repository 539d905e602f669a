// cli/main.cc — `wort <subcommand> ...`: dispatch, and the exception boundary.
#include <cstdio>
#include <exception>
#include <iostream>
#include <stdexcept>

#include "cli/commands.h"

namespace wort::cli {

std::string source_dir() {
#ifdef WORT_SOURCE_DIR
  return WORT_SOURCE_DIR;
#else
  return "";
#endif
}

namespace {

constexpr const char* kHelp = R"(usage: wort <command> [options]

Crash-consistent persistent-memory indexes (WORT, WOART, ART+CoW, ...) and the tools to
measure them.

commands:
  bench    run benchmarks: the WORT paper's workloads (Dense/Sparse/Clustered keys:
           insert, search, range) or YCSB/PiBench-style mixes; prints tables, writes
           JSON and CSV (wort bench --help)
  demo     create a pool, insert and look up keys with an index, print the flush and
           fence counters (wort demo --help)
  plot     draw the paper's figures from a bench JSON file (wort plot --help)
  list     list the registered indexes, key distributions and workload presets
  serve    a memcached-compatible cache that survives kill -9 (wort serve --help)
  check    check a pool file (a wort serve pool too) without changing it: header,
           recovery, verify, allocator audit, statistics (wort check --help)
  dump     print a pool's index (or one key's value) without changing the pool, after
           the same checks (wort dump --help)
           check and dump exit 0 sound, 1 damaged, 2 cannot check (not a pool, no such
           file, in use), 3 dump KEY: no such key

options:
  -h, --help     this text
  --version      the version
)";

}  // namespace
}  // namespace wort::cli

int main(int argc, char** argv) {
  using namespace wort::cli;
  Args all(argv, argv + argc);
  if (argc < 2) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  const Args rest(argv + 2, argv + argc);
  try {
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (cmd == "--version") {
      std::puts("wort 0.1.0");
      return 0;
    }
    if (cmd == "bench") return bench_main(rest, all);
    if (cmd == "demo") return demo_main(rest);
    if (cmd == "plot") return plot_main(rest);
    if (cmd == "list") return list_main(rest);
    if (cmd == "serve") return serve_main(rest);
    if (cmd == "check") return check_main(rest);
    if (cmd == "dump") return dump_main(rest);
    std::fprintf(stderr, "wort: unknown command '%s' (see 'wort --help')\n", cmd.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "wort: %s\n(see 'wort %s--help')\n", e.what(),
                 cmd.starts_with("-") || cmd == "help" ? "" : (cmd + " ").c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wort: error: %s\n", e.what());
    return 1;
  }
}
