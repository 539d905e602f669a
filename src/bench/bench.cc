#include "bench/bench.h"

#include <algorithm>
#include <cstdio>

#include "bench/json.h"

namespace wort::bench {

Result<void> validate(BenchOptions& o) {
  const auto kinds = Index::kinds();
  if (kinds.empty()) return Error{Status::invalid_argument, "no index is registered in this build"};
  if (o.indexes.empty()) o.indexes = kinds;
  for (const auto& entry : o.indexes) {
    auto spec = parse_index_spec(entry);
    if (!spec) return spec.error();
    const std::string& i = spec.value().kind;
    if (std::find(kinds.begin(), kinds.end(), i) == kinds.end())
      return Error{Status::invalid_argument, "unknown index '" + i + "' (registered: " + [&] {
                     std::string s;
                     for (const auto& k : kinds) s += (s.empty() ? "" : ",") + k;
                     return s;
                   }() + ")"};
  }
  if (o.dists.empty()) return Error{Status::invalid_argument, "no key distribution given"};
  if (o.keys == 0) return Error{Status::invalid_argument, "--keys must be positive"};
  if (o.keys > 0xffffffffull) return Error{Status::invalid_argument, "--keys must be below 2^32"};
  if (o.threads == 0 || o.threads > 1024) return Error{Status::invalid_argument, "--threads must be in 1..1024"};
  if (o.flush_latencies.empty()) o.flush_latencies = {0};
  if (o.workload != "paper") {
    if (o.mix.total() <= 0) return Error{Status::invalid_argument, "the mix has no operations"};
    if (o.mix.ops == 0 && o.mix.duration_s <= 0) o.mix.ops = o.keys;
  }
  if (o.llc == LlcMode::callgrind && o.llc_keys == 0) o.llc_keys = o.keys;
  return {};
}

std::vector<CaseResult> run_all(const BenchOptions& o, const ProgressFn& progress) {
  std::vector<CaseResult> out;
  const std::size_t total = o.indexes.size() * o.dists.size() * o.flush_latencies.size();
  std::size_t done = 0;
  for (auto lat : o.flush_latencies)
    for (auto d : o.dists)
      for (const auto& idx : o.indexes) {
        ProgressFn inner;
        if (progress)
          inner = [&](const std::string& label, double f) {
            progress(label, (static_cast<double>(done) + std::min(f, 1.0)) / static_cast<double>(total));
          };
        out.push_back(run_case(o, idx, d, lat, inner));
        ++done;
      }
  return out;
}

Result<std::size_t> attach_callgrind(BenchReport& r,
                                     const std::map<std::string, CallgrindTotals>& dumps,
                                     const std::string& child_json) {
  auto parsed = parse_json(child_json);
  if (!parsed) return parsed.error();
  // Op counts of the child's phases, by tag.
  std::map<std::string, std::uint64_t> ops;
  std::uint64_t child_keys = 0;
  if (const JsonValue* o = parsed.value().get("options"))
    if (const JsonValue* k = o->get("keys")) child_keys = static_cast<std::uint64_t>(k->num());
  if (const JsonValue* cases = parsed.value().get("cases")) {
    for (const auto& c : cases->arr()) {
      KeyDist d{};
      const JsonValue* dist = c.get("dist");
      const JsonValue* idx = c.get("index");
      const JsonValue* lat = c.get("flush_latency_ns");
      const JsonValue* phases = c.get("phases");
      if (!dist || !idx || !lat || !phases || !parse(dist->str(), d)) continue;
      for (const auto& p : phases->arr()) {
        const JsonValue* name = p.get("name");
        const JsonValue* n = p.get("ops");
        if (name && n)
          ops[phase_tag(idx->str(), d, static_cast<std::uint32_t>(lat->num()), name->str())] =
              static_cast<std::uint64_t>(n->num());
      }
    }
  }
  std::size_t attached = 0;
  for (auto& c : r.cases)
    for (auto& p : c.phases) {
      const std::string tag = phase_tag(c.index, c.dist, c.flush_latency_ns, p.name);
      auto it = dumps.find(tag);
      auto on = ops.find(tag);
      if (it == dumps.end() || on == ops.end()) continue;
      p.cache.source = "callgrind";
      p.cache.llc_misses = static_cast<double>(it->second.ll_misses());
      p.cache.d1_misses = static_cast<double>(it->second.d1_misses());
      p.cache.instructions = static_cast<double>(it->second.get("Ir"));
      p.cache.ops = on->second;
      p.cache.at_keys = child_keys;
      ++attached;
    }
  return attached;
}

Result<std::vector<std::string>> llc_fit_warnings(const std::string& child_json,
                                                  std::uint64_t ll_bytes) {
  auto parsed = parse_json(child_json);
  if (!parsed) return parsed.error();
  std::vector<std::string> out;
  const JsonValue* cases = parsed.value().get("cases");
  if (ll_bytes == 0 || cases == nullptr) return out;
  const auto mib = [](double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
    return std::string(buf);
  };
  for (const auto& c : cases->arr()) {
    const JsonValue* idx = c.get("index");
    const JsonValue* dist = c.get("dist");
    const JsonValue* stats = c.get("stats");
    if (!idx || !dist || !stats) continue;
    const JsonValue* pm = stats->get("pm_bytes");
    const JsonValue* dram = stats->get("dram_bytes");
    const JsonValue* keys = stats->get("keys");
    if (!pm || !dram || !keys || keys->num() <= 0) continue;  // a failed case: no tree
    const double tree = pm->num() + dram->num();
    if (tree >= static_cast<double>(ll_bytes)) continue;
    char n[32];
    std::snprintf(n, sizeof n, "%.0f", keys->num());
    out.push_back("LLC: the callgrind pass's " + idx->str() + "/" + dist->str() + " tree (" +
                  mib(tree) + " at " + n + " keys) fits in the simulated LL (" +
                  mib(static_cast<double>(ll_bytes)) +
                  "): its LLC misses say little about a large tree and may rank the indexes in "
                  "reverse; raise --llc-keys or lower --llc-size");
  }
  return out;
}

std::vector<std::string> case_failures(const std::vector<CaseResult>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) {
    if (c.error.empty()) continue;
    std::string name = c.index + "/" + std::string(to_string(c.dist));
    if (c.flush_latency_ns) name += "/" + std::to_string(c.flush_latency_ns) + "ns";
    out.push_back(name + ": " + c.error);
  }
  return out;
}

}  // namespace wort::bench
