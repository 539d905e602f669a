#include "bench/workload.h"

#include <cstdlib>
#include <cstdio>

namespace wort::bench {

std::string MixSpec::describe() const {
  std::string out;
  const double t = total();
  auto add = [&](const char* name, double v) {
    if (v <= 0) return;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s=%g%%", out.empty() ? "" : ",", name, 100.0 * v / t);
    out += buf;
  };
  add("lookup", lookup);
  add("insert", insert);
  add("update", update);
  add("remove", remove);
  add("scan", scan);
  return out;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = [] {
    auto mk = [](double l, double i, double u, double r, double s, Choice c) {
      MixSpec m;
      m.lookup = l, m.insert = i, m.update = u, m.remove = r, m.scan = s, m.choice = c;
      return m;
    };
    return std::vector<Preset>{
        {"ycsb-a", "YCSB A: 50% read, 50% update, zipfian", mk(50, 0, 50, 0, 0, Choice::zipfian)},
        {"ycsb-b", "YCSB B: 95% read, 5% update, zipfian", mk(95, 0, 5, 0, 0, Choice::zipfian)},
        {"ycsb-c", "YCSB C: 100% read, zipfian", mk(100, 0, 0, 0, 0, Choice::zipfian)},
        {"ycsb-e", "YCSB E: 95% scan (100 keys), 5% insert, zipfian",
         mk(0, 5, 0, 0, 95, Choice::zipfian)},
        {"write-intensive", "ROART (a): 50% lookup, 50% insert", mk(50, 50, 0, 0, 0, Choice::uniform)},
        {"read-intensive", "ROART (b): 95% lookup, 5% insert", mk(95, 5, 0, 0, 0, Choice::uniform)},
        {"read-only", "ROART (c): 100% lookup", mk(100, 0, 0, 0, 0, Choice::uniform)},
        {"insert-only", "ROART (d): 100% insert", mk(0, 100, 0, 0, 0, Choice::uniform)},
        {"scan-insert", "ROART (e): 95% scan, 5% insert", mk(0, 5, 0, 0, 95, Choice::uniform)},
    };
  }();
  return p;
}

const Preset* find_preset(std::string_view name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

Result<void> parse_ratios(std::string_view s, MixSpec& out) {
  MixSpec m = out;
  m.lookup = m.insert = m.update = m.remove = m.scan = 0;
  while (!s.empty()) {
    const auto comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      return Error{Status::invalid_argument, "expected op=ratio, got '" + std::string(item) + "'"};
    const std::string_view name = item.substr(0, eq);
    const std::string num(item.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || v < 0)
      return Error{Status::invalid_argument, "bad ratio '" + num + "'"};
    if (name == "lookup" || name == "read") m.lookup = v;
    else if (name == "insert") m.insert = v;
    else if (name == "update") m.update = v;
    else if (name == "remove" || name == "delete") m.remove = v;
    else if (name == "scan") m.scan = v;
    else return Error{Status::invalid_argument, "unknown operation '" + std::string(name) + "'"};
  }
  if (m.total() <= 0) return Error{Status::invalid_argument, "ratios sum to zero"};
  out = m;
  return {};
}

MixOp pick_op(const MixSpec& m, double u) noexcept {
  double x = u * m.total();
  if ((x -= m.lookup) < 0) return MixOp::lookup;
  if ((x -= m.insert) < 0) return MixOp::insert;
  if ((x -= m.update) < 0) return MixOp::update;
  if ((x -= m.remove) < 0) return MixOp::remove;
  if (m.scan > 0) return MixOp::scan;
  // u*total rounding can land exactly on total: give it to the last non-zero kind.
  if (m.remove > 0) return MixOp::remove;
  if (m.update > 0) return MixOp::update;
  if (m.insert > 0) return MixOp::insert;
  return MixOp::lookup;
}

}  // namespace wort::bench
