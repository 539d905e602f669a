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

}  // namespace wort::bench
