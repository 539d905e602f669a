// bench/workload.h — what a benchmark run does.
//
// Two shapes: the WORT paper's (insert N keys in random order, search them, range-query
// 0.001% and 0.01% of them) and a PiBench/YCSB-style mix (load N keys, then run a mix of
// lookup/insert/update/remove/scan chosen uniformly, zipfian or self-similar, for an
// operation count or a duration). Presets name the YCSB and ROART mixes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/zipf.h"
#include "wort/status.h"

namespace wort::bench {

//! Operation ratios of a mixed phase (they are normalised; they need not sum to 1).
struct MixSpec {
  double lookup = 0, insert = 0, update = 0, remove = 0, scan = 0;
  std::size_t scan_len = 100;     //!< keys per scan
  Choice choice = Choice::uniform;
  double choice_param = 0;        //!< zipfian theta (default 0.99) / self-similar h (0.2)
  std::uint64_t ops = 0;          //!< operations to run (0: as many as the duration allows)
  double duration_s = 0;          //!< seconds to run (0: run `ops` operations)

  double total() const noexcept { return lookup + insert + update + remove + scan; }
  //! "lookup=0.5,insert=0.5" style summary.
  std::string describe() const;
};

//! A named preset: ycsb-a, ycsb-b, ycsb-c, ycsb-e, write-intensive, read-intensive,
//! read-only, insert-only, scan-insert.
struct Preset {
  std::string_view name;
  std::string_view what;
  MixSpec mix;
};
const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view name);

//! Parses "lookup=50,insert=50" (also read=, scan=, update=, remove=, delete=).
Result<void> parse_ratios(std::string_view s, MixSpec& out);

//! The choice of operation for one step: draws are `u` uniform in [0, 1).
enum class MixOp : std::uint8_t { lookup, insert, update, remove, scan };
MixOp pick_op(const MixSpec& m, double u) noexcept;

}  // namespace wort::bench
