// crashsim/oracles.cc — contents, audit, continuation and drain checks.
#include "crashsim/oracles.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <map>

namespace wort::crashsim {
namespace {

std::string show(const std::optional<Value>& v) {
  return v ? std::to_string(*v) : std::string("absent");
}

//! A full scan from the empty key, at most `max` entries.
std::vector<std::pair<std::string, Value>> scan_all(const Index& ix, std::size_t max) {
  std::vector<std::pair<std::string, Value>> out;
  ix.scan(Key{}, max, [&](Key k, Value v) {
    out.emplace_back(std::string(as_string(k)), v);
    return true;
  });
  return out;
}

//! A key that is in neither `ref` nor `touched`, shaped like the touched keys (same length
//! as a random one of them), so fixed-length indexes accept it.
std::string new_key(std::mt19937_64& rng, const RefMap& ref,
                    const std::vector<std::string>& touched) {
  for (;;) {
    const std::size_t len = touched.empty() ? 8 : std::max<std::size_t>(1, touched[rng() % touched.size()].size());
    std::string k(len, '\0');
    for (char& c : k) c = static_cast<char>(rng() & 0xff);
    if (!ref.count(k) && !std::binary_search(touched.begin(), touched.end(), k)) return k;
  }
}

Problem cont(std::string detail) { return Problem{"CONTINUATION", std::move(detail)}; }

std::optional<std::string> compare_scan(const Index& ix, const RefMap& ref) {
  const auto seen = scan_all(ix, ref.size() + 64);
  if (seen.size() != ref.size())
    return "full scan returned " + std::to_string(seen.size()) + " keys, want " +
           std::to_string(ref.size());
  std::size_t i = 0;
  for (const auto& [k, v] : ref) {
    if (seen[i].first != k || seen[i].second != v)
      return "full scan position " + std::to_string(i) + ": got " + printable(seen[i].first) +
             "=" + std::to_string(seen[i].second) + ", want " + printable(k) + "=" +
             std::to_string(v);
    ++i;
  }
  return std::nullopt;
}

}  // namespace

std::string printable(const std::string& key) {
  constexpr std::size_t kShown = 48;  // long keys: the first bytes and the length
  std::string out = "\"";
  for (unsigned char c : key.substr(0, kShown)) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (key.size() > kShown) return out + "\"...(" + std::to_string(key.size()) + " bytes)";
  return out + "\"";
}

std::string describe(const KvOp& op) {
  static const char* const kNames[] = {"insert", "upsert", "update", "remove"};
  std::string s = std::string(kNames[static_cast<int>(op.kind)]) + " " + printable(op.key);
  if (op.kind != KvOp::Kind::remove) {
    s += '=';
    s += std::to_string(op.value);
  }
  return s;
}

Status apply_op(Index& ix, const KvOp& op) {
  const Key k = as_key(op.key);
  switch (op.kind) {
    case KvOp::Kind::insert: return ix.insert(k, op.value);
    case KvOp::Kind::upsert: return ix.upsert(k, op.value);
    case KvOp::Kind::update: return ix.update(k, op.value);
    case KvOp::Kind::remove: return ix.remove(k);
  }
  return Status::invalid_argument;
}

Status apply_to_reference(RefMap& ref, const KvOp& op) {
  auto it = ref.find(op.key);
  switch (op.kind) {
    case KvOp::Kind::insert:
      if (it != ref.end()) return Status::exists;
      ref.emplace(op.key, op.value);
      return Status::ok;
    case KvOp::Kind::upsert:
      ref[op.key] = op.value;
      return Status::ok;
    case KvOp::Kind::update:
      if (it == ref.end()) return Status::not_found;
      it->second = op.value;
      return Status::ok;
    case KvOp::Kind::remove:
      if (it == ref.end()) return Status::not_found;
      ref.erase(it);
      return Status::ok;
  }
  return Status::invalid_argument;
}

std::optional<Value> value_after(const RefMap& ref, const KvOp& op) {
  RefMap one;
  if (auto it = ref.find(op.key); it != ref.end()) one.emplace(it->first, it->second);
  (void)apply_to_reference(one, op);
  if (auto it = one.find(op.key); it != one.end()) return it->second;
  return std::nullopt;
}

namespace {

using AllowedMap = std::map<std::string, std::vector<std::optional<Value>>>;
using Scan = std::vector<std::pair<std::string, Value>>;

//! check_contents' problems: at most 4 of them per call.
struct ContentProblems {
  std::vector<Problem>* problems;
  std::size_t start;
  void add(const char* kind, std::string detail) {
    if (problems->size() - start < 4) problems->push_back({kind, std::move(detail)});
  }
};

//! The full scan, sorted: keys out of order are reported, then sorted, the first of equal
//! keys kept, as a map would.
Scan sorted_scan(const Index& ix, const Expect& ex, ContentProblems& out) {
  auto seen = scan_all(ix, ex.acked->size() + (ex.allowed ? ex.allowed->size() : 0) + 64);
  bool ascending = true;
  for (std::size_t i = 1; i < seen.size(); ++i) {
    if (seen[i - 1].first < seen[i].first) continue;
    ascending = false;
    out.add("EXTRA_KEY", "scan not strictly ascending: " + printable(seen[i - 1].first) +
                             " then " + printable(seen[i].first));
  }
  if (!ascending)
    std::stable_sort(seen.begin(), seen.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  return seen;
}

//! The touched keys in order (sorted here only if they are not already).
std::vector<const std::string*> sorted_touched(const Expect& ex) {
  std::vector<const std::string*> touched;
  if (!ex.touched) return touched;
  for (const std::string& k : *ex.touched) touched.push_back(&k);
  if (!std::is_sorted(ex.touched->begin(), ex.touched->end()))
    std::sort(touched.begin(), touched.end(),
              [](const std::string* a, const std::string* b) { return *a < *b; });
  return touched;
}

//! One key of the merge and what each source says of it.
struct MergedKey {
  const std::string* key = nullptr;  // in a source, which stays as it is while the heads move
  std::optional<Value> in_scan;
  std::optional<Value> want;  // acknowledged
  const std::vector<std::optional<Value>>* allowed_values = nullptr;
};

//! The merge of the four sorted sources: each call of next() gives the smallest key at the
//! head of any of them and moves every head past it.
struct Merge {
  const Scan& seen;
  const std::vector<const std::string*>& touched;
  const RefMap& acked;
  const AllowedMap& allowed;
  Scan::const_iterator si = seen.begin();
  std::vector<const std::string*>::const_iterator ti = touched.begin();
  RefMap::const_iterator ai = acked.begin();
  AllowedMap::const_iterator li = allowed.begin();

  bool next(MergedKey* m) {
    const std::string* next = nullptr;
    auto consider = [&](const std::string& k) {
      if (next == nullptr || k < *next) next = &k;
    };
    if (si != seen.end()) consider(si->first);
    if (ti != touched.end()) consider(**ti);
    if (ai != acked.end()) consider(ai->first);
    if (li != allowed.end()) consider(li->first);
    if (next == nullptr) return false;
    const std::string& k = *next;
    *m = MergedKey{next};
    if (si != seen.end() && si->first == k) {
      m->in_scan = si->second;
      while (si != seen.end() && si->first == k) ++si;
    }
    while (ti != touched.end() && **ti == k) ++ti;
    if (ai != acked.end() && ai->first == k) m->want = (ai++)->second;
    if (li != allowed.end() && li->first == k) m->allowed_values = &(li++)->second;
    return true;
  }
};

//! The in-flight key: lookup and scan agree, on its value before or after the operation.
void check_inflight(const Expect& ex, const std::optional<Value>& got,
                    const std::optional<Value>& in_scan, ContentProblems& out) {
  auto allowed = [&](const std::optional<Value>& v) { return v == ex.before_v || v == ex.after_v; };
  if (!allowed(got) || !allowed(in_scan) || got != in_scan)
    out.add("NOT_ATOMIC", "in-flight " + describe(*ex.inflight) + ": lookup " + show(got) +
                              ", scan " + show(in_scan) + ", want both " + show(ex.before_v) +
                              " (before) or both " + show(ex.after_v) + " (after)");
}

//! A key of operations in flight: lookup and scan agree, on one of the allowed values.
void check_allowed(const std::string& k, const std::vector<std::optional<Value>>& vs,
                   const std::optional<Value>& got, const std::optional<Value>& in_scan,
                   ContentProblems& out) {
  auto ok = [&](const std::optional<Value>& v) {
    return std::find(vs.begin(), vs.end(), v) != vs.end();
  };
  if (ok(got) && ok(in_scan) && got == in_scan) return;
  std::string want_text;
  for (const auto& v : vs) {
    if (!want_text.empty()) want_text += " or ";
    want_text += show(v);
  }
  out.add("NOT_ATOMIC", "key " + printable(k) + " of operations in flight: lookup " +
                            show(got) + ", scan " + show(in_scan) + ", want both " + want_text);
}

//! Any other key: lookup and scan show the acknowledged value, or nothing.
void check_acked(const std::string& k, const std::optional<Value>& got,
                 const std::optional<Value>& in_scan, const std::optional<Value>& want,
                 ContentProblems& out) {
  if (got == want && in_scan == want) return;
  if (want)
    out.add("LOST_ACK", "key " + printable(k) + ": lookup " + show(got) + ", scan " +
                            show(in_scan) + ", acknowledged " + show(want));
  else
    out.add("EXTRA_KEY", "key " + printable(k) + " present (lookup " + show(got) + ", scan " +
                             show(in_scan) + ") but never acknowledged");
}

//! The contents found: the acknowledged ones, with the values the in-flight key and the
//! keys of operations in flight showed.
void record_observed(
    const Expect& ex, const std::optional<Value>& inflight_got,
    const std::vector<std::pair<const std::string*, std::optional<Value>>>& allowed_got,
    RefMap* observed) {
  *observed = *ex.acked;
  if (ex.inflight) {
    if (inflight_got) (*observed)[ex.inflight->key] = *inflight_got;
    else observed->erase(ex.inflight->key);
  }
  for (const auto& [k, v] : allowed_got) {
    if (v) (*observed)[*k] = *v;
    else observed->erase(*k);
  }
}

}  // namespace

// Every key of the scan, of `touched`, of `acked` and of `allowed` once, in order: a merge of
// the four sorted sources (the scan sorted first if it is not), not a set built of them. On
// ASan, where every tree node is an instrumented allocation, the sets and maps this built per
// crash image were a quarter of the crash tests' time.
void check_contents(const Index& ix, const Expect& ex, RefMap* observed,
                    std::vector<Problem>* problems) {
  ContentProblems out{problems, problems->size()};
  const Scan seen = sorted_scan(ix, ex, out);
  const std::vector<const std::string*> touched = sorted_touched(ex);
  static const AllowedMap kNoneAllowed;
  Merge merge{seen, touched, *ex.acked, ex.allowed ? *ex.allowed : kNoneAllowed};
  std::optional<Value> inflight_got;
  std::vector<std::pair<const std::string*, std::optional<Value>>> allowed_got;
  for (MergedKey m; merge.next(&m);) {
    const std::string& k = *m.key;
    const std::optional<Value> got = ix.lookup(as_key(k));
    if (ex.inflight && k == ex.inflight->key) {
      check_inflight(ex, got, m.in_scan, out);
      inflight_got = got;
    } else if (m.allowed_values) {
      check_allowed(k, *m.allowed_values, got, m.in_scan, out);
      allowed_got.emplace_back(&k, got);
    } else {
      check_acked(k, got, m.in_scan, m.want, out);
    }
  }
  if (observed == nullptr || problems->size() != out.start) return;
  record_observed(ex, inflight_got, allowed_got, observed);
}

std::optional<std::string> audit_blocks(const Pool& pool, const Index& ix) {
  const pm::AuditReport r =
      pool.allocator().audit([&](pm::BlockVisitor visit) { return ix.visit_blocks(visit); });
  if (r.ok()) return std::nullopt;
  return r.describe();
}

CommitRule commit_rule(const CommitTable& table, const KvOp& op, Status want) {
  if (want != Status::ok) return table.noop;
  switch (op.kind) {
    case KvOp::Kind::insert: return table.insert;
    case KvOp::Kind::upsert: return table.upsert;
    case KvOp::Kind::update: return table.update;
    case KvOp::Kind::remove: return table.remove;
  }
  return table.noop;
}

std::optional<Problem> run_continuation(Pool& pool, Index& ix, RefMap ref,
                                        const std::vector<std::string>& touched,
                                        std::uint64_t seed, std::size_t n,
                                        const AfterOp& after_op) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned r = static_cast<unsigned>(rng() % 100);
    KvOp op;
    if (ref.empty() || r < 30) {
      op.kind = KvOp::Kind::insert;
      op.key = new_key(rng, ref, touched);
    } else {
      auto it = ref.begin();
      std::advance(it, static_cast<long>(rng() % ref.size()));
      op.key = it->first;
      if (r >= 85) {  // lookups: a present key and an absent one
        const auto got = ix.lookup(as_key(op.key));
        if (got != std::optional<Value>(it->second))
          return cont("continuation " + std::to_string(i) + ": lookup " + printable(op.key) + " = " +
                 show(got) + ", want " + std::to_string(it->second));
        const std::string absent = new_key(rng, ref, touched);
        if (auto g = ix.lookup(as_key(absent)))
          return cont("continuation " + std::to_string(i) + ": lookup of absent " +
                 printable(absent) + " = " + std::to_string(*g));
        continue;
      }
      op.kind = r < 50 ? KvOp::Kind::upsert : r < 65 ? KvOp::Kind::update : KvOp::Kind::remove;
    }
    op.value = rng();
    const RefMap before = op.kind == KvOp::Kind::remove ? RefMap{} : ref;
    const Status want = apply_to_reference(ref, op);
    const Status got = apply_op(ix, op);
    if (got == Status::out_of_space && op.kind != KvOp::Kind::remove) {
      ref = before;  // a full pool (allocator tests): out_of_space must change nothing
      continue;
    }
    if (got != want)
      return cont("continuation " + std::to_string(i) + ": " + describe(op) + " returned " +
             std::string(to_string(got)) + ", want " + std::string(to_string(want)));
    if (after_op) after_op(op, want);
  }
  if (auto s = compare_scan(ix, ref)) return cont("after continuation: " + *s);
  for (const auto& [k, v] : ref)
    if (ix.lookup(as_key(k)) != std::optional<Value>(v))
      return cont("after continuation: lookup " + printable(k) + " wrong");
  if (auto vr = ix.verify(); !vr) return cont("verify after continuation: " + vr.error().message);
  if (auto a = audit_blocks(pool, ix)) return Problem{"AUDIT", "after continuation: " + *a};
  return std::nullopt;
}

std::optional<std::string> drain_and_compare(Pool& pool, Index& ix,
                                             const pm::AllocatorStats& empty) {
  for (;;) {
    const auto batch = scan_all(ix, 256);
    if (batch.empty()) break;
    for (const auto& [k, v] : batch)
      if (Status s = ix.remove(as_key(k)); s != Status::ok)
        return "remove of scanned key " + printable(k) + " returned " +
               std::string(to_string(s));
  }
  if (auto vr = ix.verify(); !vr) return "verify after removing every key: " + vr.error().message;
  const pm::AllocatorStats s = pool.allocator().stats();
  if (s.blocks_allocated > empty.blocks_allocated || s.bytes_allocated > empty.bytes_allocated)
    return "after removing every key " + std::to_string(s.blocks_allocated) + " blocks (" +
           std::to_string(s.bytes_allocated) + " bytes) are allocated; an empty index holds " +
           std::to_string(empty.blocks_allocated) + " (" + std::to_string(empty.bytes_allocated) +
           " bytes)";
  return std::nullopt;
}

}  // namespace wort::crashsim
