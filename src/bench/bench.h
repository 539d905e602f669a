// bench/bench.h — a whole `wort bench` run: every (index, key set, write latency) case,
// then the figures a callgrind pass adds.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "bench/llc.h"
#include "bench/report.h"

namespace wort::bench {

//! Checks and completes options (fills `indexes` with every registered kind if empty).
Result<void> validate(BenchOptions& o);

//! Runs every case; `progress(label, fraction_of_whole_run)` is called as it goes.
std::vector<CaseResult> run_all(const BenchOptions& o, const ProgressFn& progress);

//! Attaches a callgrind pass's dumps (by phase tag) to the matching phases of `r`;
//! `child_json` is the JSON the callgrind child wrote (it gives each phase's op count).
//! Returns how many phases got figures.
Result<std::size_t> attach_callgrind(BenchReport& r,
                                     const std::map<std::string, CallgrindTotals>& dumps,
                                     const std::string& child_json);

//! The callgrind pass's cases whose tree fits in a simulated last-level cache of `ll_bytes`:
//! one warning per such case. The tree's size is its PM + DRAM bytes after the load, from
//! `child_json` (the JSON the callgrind child wrote, at its --llc-keys). A tree that fits
//! takes almost no LLC misses, so the pass would rank the indexes by their misses on a tree
//! far smaller than the cache, often the reverse of a large run's order.
Result<std::vector<std::string>> llc_fit_warnings(const std::string& child_json,
                                                  std::uint64_t ll_bytes);

//! The reason of every failed case, one line each ("index/dist[/latency ns]: error").
std::vector<std::string> case_failures(const std::vector<CaseResult>& cases);

}  // namespace wort::bench
