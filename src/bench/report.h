// bench/report.h — a whole benchmark run: options, environment and every case's results;
// and the writers that turn it into a terminal table, JSON and CSV.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bench/env_info.h"
#include "bench/runner.h"

namespace wort::bench {

struct BenchReport {
  BenchOptions options;
  EnvInfo env;
  std::vector<CaseResult> cases;
  std::vector<std::string> notes;  //!< things the reader must know (no hw counters, ...)
};

//! Schema version of the JSON (bump on incompatible change).
inline constexpr int kJsonSchemaVersion = 1;

//! Table 1 of the WORT paper (per index: flushes per insert, LLC misses, depth for D/S/C)
//! where the workload is the paper's, then a per-phase table and space/recovery tables.
void write_table(const BenchReport& r, std::ostream& os);
std::string to_json(const BenchReport& r);
//! One row per (case, phase, op type), plus a row per phase with op = "all".
std::string to_csv(const BenchReport& r);

std::string_view to_string(LlcMode m) noexcept;

}  // namespace wort::bench
