// crashsim/oracles.h — the checks run on an index recovered from a crash image, and the
// reference-map bookkeeping they compare against.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "pm/allocator.h"

namespace wort::crashsim {

using RefMap = std::map<std::string, Value>;

//! One failed check: its finding kind and what was wrong.
struct Problem {
  std::string kind;
  std::string detail;
};

//! What a recovered index may contain: the acknowledged state, and if an operation was in
//! flight, its key either as before the operation or as after it.
struct Expect {
  const RefMap* acked = nullptr;
  const std::vector<std::string>* touched = nullptr;  //!< keys looked up one by one
  const KvOp* inflight = nullptr;
  std::optional<Value> before_v;  //!< the in-flight key's acknowledged value
  std::optional<Value> after_v;   //!< its value if the operation completes
  //! Concurrent histories: keys whose value may be any of these (operations in flight on
  //! them, or acknowledged ones whose order the run cannot tell). Not in `acked`.
  const std::map<std::string, std::vector<std::optional<Value>>>* allowed = nullptr;
};

//! LOST_ACK / NOT_ATOMIC / EXTRA_KEY: compares a full scan and a lookup of every touched
//! (and every scanned) key with `ex`. On success `observed` (if given) receives the contents.
void check_contents(const Index& ix, const Expect& ex, RefMap* observed,
                    std::vector<Problem>* problems);

//! Allocator audit against the index's visit_blocks; a description of the problems or none.
std::optional<std::string> audit_blocks(const Pool& pool, const Index& ix);

//! CONTINUATION: `n` seeded random operations (insert new keys, upsert / update / remove
//! existing ones, lookups of present and absent keys) checked against `ref`, then a full
//! scan and verify(); then an audit (kind AUDIT: after recovery alone the tracing allocator
//! agrees with the walk by construction, so the audit means something only once the
//! recovered index has allocated and freed). The first problem, or none.
//! `after_op` (if set) is called after each mutating operation with the Status it must
//! return (for the commit oracle and the lints).
using AfterOp = std::function<void(const KvOp&, Status want)>;
std::optional<Problem> run_continuation(Pool& pool, Index& ix, RefMap ref,
                                        const std::vector<std::string>& touched,
                                        std::uint64_t seed, std::size_t n,
                                        const AfterOp& after_op = {});

//! The commit rule of `op` given the Status it returns; false if `table` has none.
CommitRule commit_rule(const CommitTable& table, const KvOp& op, Status want);

//! DRAIN: removes every key, then checks that the allocator holds no more blocks or bytes
//! than a freshly created empty index (`empty`).
std::optional<std::string> drain_and_compare(Pool& pool, Index& ix,
                                             const pm::AllocatorStats& empty);

//! Applies `op` to the index.
Status apply_op(Index& ix, const KvOp& op);
//! Applies `op` to the reference; returns the Status the index must return.
Status apply_to_reference(RefMap& ref, const KvOp& op);
//! The value `op`'s key will have after it (without changing `ref`).
std::optional<Value> value_after(const RefMap& ref, const KvOp& op);

//! "upsert \"k\"=5" for messages.
std::string describe(const KvOp& op);
//! A key for messages: printable bytes, \xNN escapes.
std::string printable(const std::string& key);

}  // namespace wort::crashsim
