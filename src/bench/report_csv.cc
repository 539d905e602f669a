#include <cmath>
#include <cstdio>
#include <sstream>

#include "bench/report.h"

namespace wort::bench {
namespace {

std::string num(double d) {
  if (!std::isfinite(d)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", d);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

}  // namespace

std::string to_csv(const BenchReport& r) {
  std::ostringstream os;
  os << "index,dist,flush_latency_ns,keys,phase,op,ops,seconds,throughput_ops_s,ns_per_op,cpu_ns_per_op,"
        "p50_ns,p90_ns,p99_ns,p99_9_ns,sampled_mean_ns,lines_per_op,flush_calls_per_op,fences_per_op,misses,"
        "llc_misses_per_op,avg_leaf_depth,pm_bytes_per_key,dram_bytes_per_key,error,"
        "lines_written_back_per_op,nt_stores_per_op\n";
  for (const auto& c : r.cases) {
    const std::string head = csv_field(c.index) + "," + std::string(to_string(c.dist)) + "," +
                             std::to_string(c.flush_latency_ns) + "," + std::to_string(c.keys) + ",";
    const std::string tail = "," + num(c.stats.avg_leaf_depth) + "," + num(c.pm_bytes_per_key()) +
                             "," + num(c.dram_bytes_per_key()) + "," + csv_field(c.error) + ",";
    for (const auto& p : c.phases) {
      const std::string per = num(p.lines_per_op()) + "," + num(p.flushes_per_op()) + "," +
                              num(p.fences_per_op());
      const std::string llc = num(per_op(p.cache.llc_misses, p.cache.ops));
      // Whole phase: its latency columns are empty when several op types mix.
      os << head << csv_field(p.name) << ",all," << p.ops << "," << num(p.seconds) << ","
         << num(p.throughput()) << "," << num(p.ns_per_op()) << "," << num(p.cpu_ns_per_op())
         << ",,,,,," << per << ","
         << p.misses() << "," << llc << tail << num(p.written_back_per_op()) << ","
         << num(p.nt_stores_per_op()) << "\n";
      for (std::size_t i = 0; i < kOpTypes; ++i) {
        const OpStats& s = p.per_type[i];
        if (s.ops == 0) continue;
        const auto& h = s.latency;
        os << head << csv_field(p.name) << "," << to_string(static_cast<OpType>(i)) << ","
           << s.ops << ",,,,," << num(h.percentile(50)) << "," << num(h.percentile(90)) << ","
           << num(h.percentile(99)) << "," << num(h.percentile(99.9)) << ","
           << num(h.count() ? h.mean() : std::nan("")) << "," << num(s.lines_per_op()) << ","
           << num(s.flushes_per_op()) << "," << num(s.fences_per_op()) << "," << s.misses
           << "," << tail << num(s.written_back_per_op()) << "," << num(s.nt_stores_per_op())
           << "\n";
      }
    }
  }
  return os.str();
}

}  // namespace wort::bench
