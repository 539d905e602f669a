#include <algorithm>
#include <cstdio>
#include <set>

#include "bench/report.h"

namespace wort::bench {
namespace {

std::string fmt(double d, const char* f = "%.1f") {
  if (!std::isfinite(d)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, f, d);
  return buf;
}

// A plain text table: first column left-aligned, the rest right-aligned.
class Table {
 public:
  void row(std::vector<std::string> r) { rows_.push_back(std::move(r)); }
  void rule() { rows_.emplace_back(); }
  void print(std::ostream& os) const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    std::size_t total = 0;
    for (auto w : width) total += w + 2;
    for (const auto& r : rows_) {
      if (r.empty()) {
        os << std::string(total, '-') << '\n';
        continue;
      }
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::string pad(width[i] - r[i].size(), ' ');
        line += i == 0 ? r[i] + pad : pad + r[i];
        line += "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      os << line << '\n';
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

const CaseResult* find_case(const BenchReport& r, const std::string& index, KeyDist d,
                            std::uint32_t lat) {
  for (const auto& c : r.cases)
    if (c.index == index && c.dist == d && c.flush_latency_ns == lat) return &c;
  return nullptr;
}

std::vector<std::string> case_indexes(const BenchReport& r) {
  std::vector<std::string> out;
  for (const auto& c : r.cases)
    if (std::find(out.begin(), out.end(), c.index) == out.end()) out.push_back(c.index);
  return out;
}

std::vector<KeyDist> case_dists(const BenchReport& r) {
  std::vector<KeyDist> out;
  for (const auto& c : r.cases)
    if (std::find(out.begin(), out.end(), c.dist) == out.end()) out.push_back(c.dist);
  return out;
}

std::string dist_letter(KeyDist d) {
  switch (d) {
    case KeyDist::dense: return "D";
    case KeyDist::sparse: return "S";
    case KeyDist::clustered: return "C";
    default: return std::string(to_string(d));
  }
}

double phase_value(const CaseResult* c, const char* phase, double (*get)(const PhaseResult&)) {
  if (!c) return std::nan("");
  const PhaseResult* p = c->phase(phase);
  return p ? get(*p) : std::nan("");
}

double llc_per_op(const PhaseResult& p) { return per_op(p.cache.llc_misses, p.cache.ops); }
double cpu_ns_per_op(const PhaseResult& p) { return p.cpu_ns_per_op(); }

// Lines written back per operation with its two parts: "4.29 (3.19+1.10)" is 3.19 lines
// flushed plus 1.10 non-temporal stores.
template <class Counted>
std::string written_back(const Counted& s) {
  if (!std::isfinite(s.written_back_per_op())) return "-";
  return fmt(s.written_back_per_op(), "%.2f") + " (" + fmt(s.lines_per_op(), "%.2f") + "+" +
         fmt(s.nt_stores_per_op(), "%.2f") + ")";
}

// A two-line header: each title spans one column per key distribution (D, S, C), then a rule.
void grouped_header(Table& t, const std::vector<std::string>& titles,
                    const std::vector<KeyDist>& dists) {
  std::vector<std::string> groups{""}, head{"index"};
  for (const auto& title : titles) {
    groups.push_back(title);
    for (std::size_t i = 1; i < dists.size(); ++i) groups.emplace_back("");
    for (auto d : dists) head.push_back(dist_letter(d));
  }
  t.row(groups);
  t.row(head);
  t.rule();
}

// The WORT paper's Table 1: (a) LLC misses per insert, (b) lines written back per insert
// (flushed + non-temporal stores, both shown), (c) LLC misses per search, (d) average leaf
// depth, each for every key distribution.
void write_table1(const BenchReport& r, std::uint32_t lat, std::ostream& os) {
  const auto dists = case_dists(r);
  Table t;
  grouped_header(t, {"(a) LLC miss/insert", "(b) lines written back/insert",
                     "(c) LLC miss/search", "(d) avg leaf depth"}, dists);
  for (const auto& idx : case_indexes(r)) {
    std::vector<std::string> row{idx};
    for (auto d : dists) row.push_back(fmt(phase_value(find_case(r, idx, d, lat), "insert", llc_per_op)));
    for (auto d : dists) {
      const CaseResult* c = find_case(r, idx, d, lat);
      const PhaseResult* p = c ? c->phase("insert") : nullptr;
      row.push_back(p ? written_back(*p) : "-");
    }
    for (auto d : dists) row.push_back(fmt(phase_value(find_case(r, idx, d, lat), "search", llc_per_op)));
    for (auto d : dists) {
      const CaseResult* c = find_case(r, idx, d, lat);
      row.push_back(c ? fmt(c->stats.avg_leaf_depth, "%.2f") : "-");
    }
    t.row(row);
  }
  os << "Table 1 (layout of the WORT paper's Table 1; D=Dense S=Sparse C=Clustered; (b) lines\n"
        "written back = lines flushed + non-temporal 8-byte stores, the two parts in brackets):\n";
  t.print(os);
  bool llc = false;
  for (const auto& c : r.cases)
    for (const auto& p : c.phases) llc |= std::isfinite(p.cache.llc_misses);
  if (!llc) os << "(LLC columns: run with --llc perf, or --llc callgrind where the machine has no counters)\n";
  std::uint64_t at_keys = 0;
  std::string source;
  for (const auto& c : r.cases)
    for (const auto& p : c.phases)
      if (std::isfinite(p.cache.llc_misses)) at_keys = p.cache.at_keys, source = p.cache.source;
  if (llc && at_keys != r.options.keys)
    os << "(LLC columns measured by a " << at_keys << "-key " << source << " pass" << (r.options.llc_size ? " with a " + std::to_string(r.options.llc_size >> 10) + " KiB LL" : "")
       << "; the other columns at " << r.options.keys << " keys)\n";
}

// Time per operation (Figures 7, 9, 10 of the paper).
void write_times(const BenchReport& r, std::uint32_t lat, std::ostream& os) {
  const auto dists = case_dists(r);
  std::set<std::string> range_names;
  for (const auto& c : r.cases)
    for (const auto& p : c.phases)
      if (p.name.starts_with("range")) range_names.insert(p.name);
  Table t;
  std::vector<std::string> phases{"insert", "search"};
  phases.insert(phases.end(), range_names.begin(), range_names.end());
  std::vector<std::string> titles;
  for (const auto& ph : phases) titles.push_back(ph + " cpu ns/op");
  grouped_header(t, titles, dists);
  for (const auto& idx : case_indexes(r)) {
    std::vector<std::string> row{idx};
    for (const auto& ph : phases)
      for (auto d : dists) row.push_back(fmt(phase_value(find_case(r, idx, d, lat), ph.c_str(), cpu_ns_per_op), "%.0f"));
    t.row(row);
  }
  os << "CPU time per operation (Fig. 7 insert, Fig. 9 search, Fig. 10 range; the worker threads'\n"
        "CPU time, which a busy machine does not inflate; wall time is in \"Phases\" below):\n";
  t.print(os);
}

double instr_per_op(const PhaseResult& p) { return per_op(p.cache.instructions, p.cache.ops); }

// The type-erased handle's cost: search-virtual (a tight loop through wort::Index) against
// search-direct (the same loop on the concrete class), also in callgrind instructions when
// measured; and search (the bench's timed loop) against search-direct.
// Writes nothing and returns false when no case has a search-direct phase.
bool write_adapter(const BenchReport& r, std::uint32_t lat, std::ostream& os) {
  const auto dists = case_dists(r);
  bool any = false, instr = false;
  for (const auto& c : r.cases) {
    any |= c.phase("search-direct") != nullptr;
    if (const PhaseResult* p = c.phase("search-direct")) instr |= std::isfinite(p->cache.instructions);
  }
  if (!any) return false;
  Table t;
  std::vector<std::string> titles{"direct cpu ns/op", "virtual/direct"};
  if (instr) titles.emplace_back("virtual/direct instr");
  titles.emplace_back("search/direct");
  grouped_header(t, titles, dists);
  for (const auto& idx : case_indexes(r)) {
    std::vector<std::string> row{idx};
    for (auto d : dists) row.push_back(fmt(phase_value(find_case(r, idx, d, lat), "search-direct", cpu_ns_per_op), "%.0f"));
    for (auto d : dists) {
      const CaseResult* c = find_case(r, idx, d, lat);
      row.push_back(c ? fmt(c->adapter_overhead(), "%.3f") : "-");
    }
    if (instr)
      for (auto d : dists) {
        const CaseResult* c = find_case(r, idx, d, lat);
        row.push_back(fmt(phase_value(c, "search-virtual", instr_per_op) / phase_value(c, "search-direct", instr_per_op), "%.3f"));
      }
    for (auto d : dists) {
      const CaseResult* c = find_case(r, idx, d, lat);
      row.push_back(c ? fmt(c->search_over_direct(), "%.3f") : "-");
    }
    t.row(row);
  }
  os << "Adapter overhead (CPU ns/op ratios; virtual = search-virtual, the same lookup loop through\n"
        "wort::Index as direct = search-direct on the concrete class; search/direct adds the\n"
        "bench's per-op bookkeeping and latency samples; see src/bench/README.md):\n";
  t.print(os);
  return true;
}

// Insertion time against emulated PM write latency (Figure 8).
void write_latency_sweep(const BenchReport& r, std::ostream& os) {
  const auto& lats = r.options.flush_latencies;
  Table t;
  std::vector<std::string> head{"index/dist"};
  for (auto l : lats) head.push_back(std::to_string(l) + "ns");
  t.row(head);
  t.rule();
  for (const auto& idx : case_indexes(r))
    for (auto d : case_dists(r)) {
      std::vector<std::string> row{idx + "/" + std::string(to_string(d))};
      for (auto l : lats) row.push_back(fmt(phase_value(find_case(r, idx, d, l), "insert", cpu_ns_per_op), "%.0f"));
      t.row(row);
    }
  os << "Insert CPU ns/op against emulated write latency per flushed line (Fig. 8):\n";
  t.print(os);
}

void write_phases(const BenchReport& r, std::ostream& os) {
  Table t;
  t.row({"case", "phase", "op", "ops", "Mops/s", "ns/op", "cpu ns/op", "mean", "p50", "p90", "p99",
         "p99.9", "written back/op", "flush/op", "fence/op", "misses"});
  t.rule();
  for (const auto& c : r.cases) {
    std::string name = c.index + "/" + std::string(to_string(c.dist));
    if (c.flush_latency_ns) name += "/" + std::to_string(c.flush_latency_ns) + "ns";
    if (!c.error.empty()) t.row({name, "ERROR: " + c.error});
    for (const auto& p : c.phases) {
      for (std::size_t i = 0; i < kOpTypes; ++i) {
        const OpStats& s = p.per_type[i];
        if (s.ops == 0) continue;
        const bool whole = s.ops == p.ops;
        const auto& h = s.latency;
        t.row({name, p.name, std::string(to_string(static_cast<OpType>(i))), std::to_string(s.ops),
               whole ? fmt(p.throughput() / 1e6, "%.3f") : "", whole ? fmt(p.ns_per_op(), "%.0f") : "",
               whole ? fmt(p.cpu_ns_per_op(), "%.0f") : "", h.count() ? fmt(h.mean(), "%.0f") : "",
               fmt(h.percentile(50), "%.0f"), fmt(h.percentile(90), "%.0f"),
               fmt(h.percentile(99), "%.0f"), fmt(h.percentile(99.9), "%.0f"),
               written_back(s), fmt(s.flushes_per_op(), "%.2f"), fmt(s.fences_per_op(), "%.2f"),
               std::to_string(s.misses)});
      }
      if (p.ops > 0 &&
          std::count_if(p.per_type.begin(), p.per_type.end(), [&](const OpStats& s) { return s.ops == p.ops; }) == 0)
        t.row({name, p.name, "all", std::to_string(p.ops), fmt(p.throughput() / 1e6, "%.3f"),
               fmt(p.ns_per_op(), "%.0f"), fmt(p.cpu_ns_per_op(), "%.0f"), "", "", "", "", "",
               written_back(p), fmt(p.flushes_per_op(), "%.2f"), fmt(p.fences_per_op(), "%.2f"),
               std::to_string(p.misses())});
    }
  }
  os << "Phases (ns/op is wall time; cpu ns/op is the threads' CPU time, lower when the machine is\n"
        "shared; mean and percentiles in ns over the latency samples, taken at random gaps: the\n"
        "sampled mean should agree with ns/op; lines written back = lines flushed + non-temporal\n"
        "stores, per operation of that type):\n";
  t.print(os);
}

// With several worker threads: each thread's throughput beside the total, per phase (a
// concurrent index runs every thread at once; another one takes turns under the bench lock).
void write_threads(const BenchReport& r, std::ostream& os) {
  const unsigned n = r.options.threads;
  Table t;
  std::vector<std::string> head{"case", "phase", "total Mops/s"};
  for (unsigned i = 0; i < n; ++i) head.push_back("t" + std::to_string(i) + " Mops/s");
  t.row(head);
  t.rule();
  for (const auto& c : r.cases)
    for (const auto& p : c.phases) {
      if (p.thread_ops.size() < 2) continue;  // a phase that always runs on one thread
      std::vector<std::string> row{c.index + "/" + std::string(to_string(c.dist)), p.name,
                                   fmt(p.throughput() / 1e6, "%.3f")};
      for (unsigned i = 0; i < n; ++i) row.push_back(fmt(p.thread_throughput(i) / 1e6, "%.3f"));
      t.row(row);
    }
  os << "Per-thread throughput (each thread's operations over its own wall time; the total is\n"
        "all operations over the phase's wall time):\n";
  t.print(os);
  os << "\n";
}

// Cache figures per phase, where measured (perf or callgrind).
void write_cache(const BenchReport& r, std::ostream& os) {
  Table t;
  t.row({"case", "phase", "source", "at keys", "LLC miss/op", "D1 miss/op", "instr/op"});
  t.rule();
  bool any = false;
  for (const auto& c : r.cases)
    for (const auto& p : c.phases) {
      if (!std::isfinite(p.cache.llc_misses)) continue;
      any = true;
      t.row({c.index + "/" + std::string(to_string(c.dist)), p.name, p.cache.source,
             std::to_string(p.cache.at_keys), fmt(per_op(p.cache.llc_misses, p.cache.ops), "%.2f"),
             fmt(per_op(p.cache.d1_misses, p.cache.ops), "%.2f"),
             fmt(per_op(p.cache.instructions, p.cache.ops), "%.0f")});
    }
  if (!any) return;
  os << "Cache misses and instructions per operation:\n";
  t.print(os);
  os << "\n";
}

void write_space(const BenchReport& r, std::ostream& os) {
  Table t;
  t.row({"case", "keys", "key bytes", "PM B/key", "DRAM B/key", "alloc B/key", "avg depth",
         "max depth", "nodes"});
  t.rule();
  for (const auto& c : r.cases) {
    if (c.flush_latency_ns != r.options.flush_latencies.front()) continue;
    std::string nodes;
    for (const auto& [k, v] : c.stats.nodes) nodes += (nodes.empty() ? "" : " ") + k + "=" + std::to_string(v);
    t.row({c.index + "/" + std::string(to_string(c.dist)), std::to_string(c.stats.keys),
           fmt(c.avg_key_len), fmt(c.pm_bytes_per_key()), fmt(c.dram_bytes_per_key()),
           fmt(per_op(static_cast<double>(c.pool_bytes), c.stats.keys)),
           fmt(c.stats.avg_leaf_depth, "%.2f"), std::to_string(c.stats.max_leaf_depth), nodes});
  }
  os << "Space after the load:\n";
  t.print(os);
}

void write_recovery(const BenchReport& r, std::ostream& os) {
  Table t;
  t.row({"case", "acked", "lost", "open+lookup ms", "+reclaim ms", "note"});
  t.rule();
  bool any = false;
  for (const auto& c : r.cases) {
    if (!c.recovery.measured && c.recovery.error.empty()) continue;
    any = true;
    t.row({c.index + "/" + std::string(to_string(c.dist)), std::to_string(c.recovery.acknowledged),
           std::to_string(c.recovery.lost), fmt(c.recovery.open_s * 1e3, "%.2f"),
           fmt(c.recovery.reclaim_s * 1e3, "%.2f"), c.recovery.error});
  }
  if (!any) return;
  os << "Recovery after kill -9 in the middle of the load:\n";
  t.print(os);
}

}  // namespace

void write_table(const BenchReport& r, std::ostream& os) {
  const BenchOptions& o = r.options;
  os << "wort bench: " << o.keys << " keys, workload " << o.workload << ", PM mode "
     << r.env.pm_mode << " (" << r.env.flush_insn << "), threads " << o.threads << ", seed "
     << o.seed << ", git " << r.env.git_revision << "\n";
  if (std::isfinite(r.env.load_start[0]) || std::isfinite(r.env.load_end[0]))
    os << "load average (1 min): " << fmt(r.env.load_start[0], "%.2f") << " at the start, "
       << fmt(r.env.load_end[0], "%.2f") << " at the end, on " << r.env.cpus << " CPUs\n";
  for (const auto& n : r.notes) os << "note: " << n << "\n";
  os << "\n";
  const std::uint32_t lat0 = o.flush_latencies.empty() ? 0 : o.flush_latencies.front();
  if (o.workload == "paper") {
    write_table1(r, lat0, os);
    os << "\n";
    write_times(r, lat0, os);
    os << "\n";
    if (write_adapter(r, lat0, os)) os << "\n";
    if (o.flush_latencies.size() > 1) {
      write_latency_sweep(r, os);
      os << "\n";
    }
  }
  write_phases(r, os);
  os << "\n";
  if (o.threads > 1) write_threads(r, os);
  write_cache(r, os);
  write_space(r, os);
  if (o.recovery) {
    os << "\n";
    write_recovery(r, os);
  }
}

}  // namespace wort::bench
