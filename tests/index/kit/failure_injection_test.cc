// Fail the N-th allocation, for every N (rax's rax_oom_malloc.h idea), over a mixed workload
// on every registered persistent index: the operation that meets the failure answers
// out_of_space and changes nothing, every other operation behaves as on std::map, and at the
// end the index verifies, holds exactly the reference's pairs, and the allocator's audit
// finds no leaked or doubly used block — also after reopening a copy of the pool.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "index/kit/kit_support.h"
#include "pm/allocator.h"
#include "pm/tracer.h"

namespace wort {
namespace {

using kittest::key_of;

//! Counts allocations (the sweep's upper bound) through the tracer hook.
class AllocCounter final : public pm::Tracer {
 public:
  std::uint64_t allocs = 0;
  void on_store(void*, const void*, std::size_t) override {}
  void on_nt_store(void*, std::uint64_t) override {}
  void on_flush(const void*, std::size_t) override {}
  void on_fence() override {}
  void on_alloc(void*, std::size_t) override { ++allocs; }
};

enum class Op { insert, upsert, update, remove };
struct Step {
  Op op;
  std::size_t key;
};

std::vector<Step> workload(std::size_t nkeys, std::size_t nsteps) {
  std::mt19937_64 rng(7);
  std::vector<Step> w;
  for (std::size_t i = 0; i < nsteps; ++i) {
    const auto r = rng() % 10;
    const Op op = r < 5 ? Op::insert : r < 7 ? Op::upsert : r < 8 ? Op::update : Op::remove;
    w.push_back({op, static_cast<std::size_t>(rng() % nkeys)});
  }
  return w;
}

//! Expected status of `s` on the reference, applying it there.
Status apply(std::map<std::string, Value>& ref, const std::string& k, Step s, Value v) {
  const bool present = ref.count(k) != 0;
  switch (s.op) {
    case Op::insert:
      if (present) return Status::exists;
      ref[k] = v;
      return Status::ok;
    case Op::upsert: ref[k] = v; return Status::ok;
    case Op::update:
      if (!present) return Status::not_found;
      ref[k] = v;
      return Status::ok;
    case Op::remove:
      if (!present) return Status::not_found;
      ref.erase(k);
      return Status::ok;
  }
  return Status::invalid_argument;
}

Status run(Index& ix, const std::string& k, Step s, Value v) {
  switch (s.op) {
    case Op::insert: return ix.insert(key_of(k), v);
    case Op::upsert: return ix.upsert(key_of(k), v);
    case Op::update: return ix.update(key_of(k), v);
    case Op::remove: return ix.remove(key_of(k));
  }
  return Status::invalid_argument;
}

void expect_matches(Pool& pool, Index& ix, const std::map<std::string, Value>& ref) {
  auto v = ix.verify();
  ASSERT_TRUE(v.ok()) << v.error().message;
  std::map<std::string, Value> got;
  ix.scan(Key{}, SIZE_MAX, [&](Key k, Value val) {
    got.emplace(std::string(reinterpret_cast<const char*>(k.data()), k.size()), val);
    return true;
  });
  EXPECT_TRUE(got == ref) << "index holds " << got.size() << " pairs, reference " << ref.size();
  kittest::expect_audit_clean(pool, ix);
}

class FailureInjection : public ::testing::TestWithParam<std::string> {};

TEST_P(FailureInjection, FailingTheNthAllocationForEveryNLeavesEverythingSound) {
  const std::string kind = GetParam();
  const auto keys = kittest::mixed_keys(150);
  const auto steps = workload(keys.size(), 600);
  PoolOptions o;
  o.size = 8u << 20;
  o.kind = kind;
  // The sweep's bound: allocations the whole workload makes when nothing fails.
  std::uint64_t total = 0;
  {
    auto pool = Pool::create_in_memory(o);
    ASSERT_TRUE(pool.ok());
    AllocCounter counter;
    pm::Tracer* prev = pm::set_tracer(&counter);
    auto ix = Index::create(**pool, kind);
    for (std::size_t i = 0; ix && i < steps.size(); ++i)
      (void)run(**ix, keys[steps[i].key], steps[i], i);
    pm::set_tracer(prev);
    ASSERT_TRUE(ix.ok());
    total = counter.allocs;
  }
  ASSERT_GT(total, 10u);
  std::uint64_t failed_ops = 0;
  for (std::uint64_t n = 1; n <= total + 1; ++n) {
    SCOPED_TRACE(kind + ": allocation " + std::to_string(n) + " of " + std::to_string(total) +
                 " fails");
    auto pool = Pool::create_in_memory(o);
    ASSERT_TRUE(pool.ok());
    (*pool)->allocator().fail_nth_allocation(n);
    auto ix = Index::create(**pool, kind);
    if (!ix) {  // the create itself met the failure: nothing may be left behind
      EXPECT_EQ(ix.status(), Status::out_of_space) << ix.error().message;
      EXPECT_EQ((*pool)->root(), 0u);
      continue;
    }
    std::map<std::string, Value> ref;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const std::string& k = keys[steps[i].key];
      const Status got = run(**ix, k, steps[i], i);
      if (got == Status::out_of_space) {
        ++failed_ops;
        continue;  // changed nothing: the reference stays as it is
      }
      ASSERT_EQ(got, apply(ref, k, steps[i], i)) << "step " << i;
    }
    ASSERT_NO_FATAL_FAILURE(expect_matches(**pool, **ix, ref));
    // The same pool reopened from a copy of its bytes: recovery agrees.
    ix->reset();
    std::unique_ptr<std::byte[], void (*)(void*)> copy(
        static_cast<std::byte*>(std::aligned_alloc(64, (*pool)->size())), std::free);
    std::memcpy(copy.get(), (*pool)->base(), (*pool)->size());
    auto again = Pool::attach({copy.get(), (*pool)->size()});
    ASSERT_TRUE(again.ok()) << again.error().message;
    auto reopened = Index::open(**again);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    ASSERT_NO_FATAL_FAILURE(expect_matches(**again, **reopened, ref));
  }
  EXPECT_GT(failed_ops, 0u) << "no operation ever met the injected failure";
}

INSTANTIATE_TEST_SUITE_P(EveryPersistentIndex, FailureInjection,
                         ::testing::ValuesIn(kittest::persistent_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wort
