// index/kit/anchor.h — create and open an index's anchor block, and run the recovery
// trace: the part of opening a pool that every index shares.
//
// An anchor is the one block the pool root names. Its first field is a u64 magic that says
// which index (and layout) wrote it; the rest is the index's own (a root word, options).
// create_anchor writes and persists the whole anchor, then commits it as the pool root
// (pm::commit, the create commit): a crash before that leaves a pool with no index and a
// block that the next open's trace reclaims.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "index/kit/checked_walk.h"
#include "pm/allocator.h"
#include "pm/persist.h"
#include "wort/index.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::kit {

//! Fails with wrong_kind unless the pool's header names `kind`.
inline Result<void> check_kind(const Pool& pool, std::string_view kind) {
  if (pool.kind() == kind) return {};
  return Error{Status::wrong_kind, "pool holds kind \"" + std::string(pool.kind()) +
                                       "\", not \"" + std::string(kind) + "\""};
}

template <class A>
concept AnchorLayout = std::is_standard_layout_v<A> && std::is_trivially_copyable_v<A> &&
                       requires(A a) { { a.magic } -> std::same_as<std::uint64_t&>; };

//! Allocates the anchor, writes `image` into it, persists it and commits it as the pool
//! root. Fails if the pool is of another kind or already holds an index.
template <AnchorLayout A>
Result<A*> create_anchor(Pool& pool, std::string_view kind, const A& image) {
  static_assert(offsetof(A, magic) == 0, "an anchor starts with its magic");
  if (auto r = check_kind(pool, kind); !r) return r.error();
  if (pool.root() != 0) return Error{Status::invalid_argument, "pool already holds an index"};
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(sizeof(A), &off); s != Status::ok)
    return Error{s, std::string(kind) + ": no space for the anchor block"};
  A* a = pool.at<A>(off);
  pm::copy(a, &image, sizeof(A));
  pm::flush(a, sizeof(A));
  pool.set_root(off);  // pm::publish: fences the anchor's write-back, then the root
  return a;
}

//! Checks the kind, that the pool root names a block of this pool with room for A and
//! aligned for it, and the anchor's magic.
template <AnchorLayout A>
Result<A*> open_anchor(Pool& pool, std::string_view kind, std::uint64_t magic) {
  if (auto r = check_kind(pool, kind); !r) return r.error();
  const std::uint64_t off = pool.root();
  if (off == 0) return Error{Status::corrupt, std::string(kind) + ": the pool holds no index"};
  if (!BlockCheck(pool).holds(off, sizeof(A), alignof(A) < 8 ? 8 : alignof(A)))
    return Error{Status::corrupt, std::string(kind) + ": pool root " + CheckedWalk::hex(off) +
                                      " is not an anchor block"};
  A* a = pool.at<A>(off);
  if (a->magic != magic)
    return Error{Status::corrupt, std::string(kind) + ": anchor magic mismatch (" +
                                      CheckedWalk::hex(a->magic) + ")"};
  return a;
}

//! The commit of a value overwritten in place (upsert/update of a present key). In a pool
//! whose values name blocks the caller has just written and flushed
//! (PoolOptions::values_are_blocks: the server's items), those write-backs are pending, so
//! the commit publishes (fences first); otherwise a value depends on nothing.
inline void commit_value(const Pool& pool, std::uint64_t* dst, std::uint64_t v) noexcept {
  if (pool.values_are_blocks()) pm::publish(dst, v);
  else pm::commit(dst, v);
}

//! commit_value for an index whose readers take no lock: non-temporal (pm::commit_nt /
//! pm::publish_nt), so no reader sees the value before it is durable. (commit_nt first in
//! source order: tools/mutations/kit.txt names it "1".)
inline void commit_value_nt(const Pool& pool, std::uint64_t* dst, std::uint64_t v) noexcept {
  if (!pool.values_are_blocks()) pm::commit_nt(dst, v);
  else pm::publish_nt(dst, v);
}

//! Every block the index reaches, and, in a pool whose values name blocks
//! (PoolOptions::values_are_blocks: the server's items), each value's block, checked.
template <IndexConcept T>
Result<void> walk_all(const Pool& pool, const T& index, pm::BlockVisitor visit) {
  if (auto r = index.visit_blocks(visit); !r) return r;
  if (!pool.values_are_blocks()) return {};
  const BlockCheck check(pool);
  std::string bad;
  index.scan(Key{}, SIZE_MAX, [&](Key, Value v) {
    if (!check.holds(v, 16, 16)) {
      bad = "value " + CheckedWalk::hex(v) + " does not name a block of this pool";
      return false;
    }
    visit(v);
    return true;
  });
  if (!bad.empty()) return Error{Status::corrupt, std::string(T::kKind) + ": " + bad};
  return {};
}

//! Every index's open runs this before anything else reads the tree: the checked walk over
//! every block the index reaches (so a damaged pool fails here, with corrupt, and never
//! later in a reader), and, when the allocator awaits its trace (any reopened pool), the
//! recovery trace itself: reached blocks stay, the rest of the chunks carved before the
//! open become free. A failed walk changes nothing.
template <IndexConcept T>
Result<void> recover(Pool& pool, const T& index) {
  return pool.allocator().recover([&](pm::BlockVisitor v) { return walk_all(pool, index, v); });
}

}  // namespace wort::kit
