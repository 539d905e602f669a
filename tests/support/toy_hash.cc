// tests/support/toy_hash.cc — the toy hash table and its broken variants.
#include "support/toy_hash.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "index/registry.h"
#include "pm/allocator.h"
#include <memory>

#include "pm/persist.h"

namespace wort::test {

using toy::Bucket;
using toy::NodeHeader;
using toy::Root;

namespace {

// Chains longer than this are cycles (a crash image can hold any garbage).
constexpr std::size_t kMaxChain = 1u << 20;

std::uint64_t fnv1a(Key k) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : k) h = (h ^ static_cast<std::uint8_t>(b)) * 0x100000001b3ull;
  return h;
}

bool same_line(const void* a, const void* b) {
  return reinterpret_cast<std::uintptr_t>(a) / pm::kCacheLine ==
         reinterpret_cast<std::uintptr_t>(b) / pm::kCacheLine;
}

Key key_of(const NodeHeader* n) {
  return {reinterpret_cast<const std::byte*>(n + 1), n->key_len};
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"  // on purpose: the toy bug
//! Runaway recursion (recurse_recovery): overflows the stack.
[[gnu::noinline]] std::uint64_t recurse_forever(std::uint64_t n) {
  volatile char pad[512];
  pad[0] = static_cast<char>(n);
  return recurse_forever(n + 1) + static_cast<std::uint64_t>(pad[0]);
}
#pragma GCC diagnostic pop

}  // namespace

template <ToyBug B>
Result<std::unique_ptr<ToyHash<B>>> ToyHash<B>::create(Pool& pool, const IndexOptions&) {
  if (pool.root() != 0) return Error{Status::invalid_argument, "pool already holds an index"};
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(sizeof(Root), &off); s != Status::ok)
    return Error{s, "no room for the toy hash root"};
  Root r{};
  r.magic = toy::kRootMagic;
  r.nbuckets = toy::kBuckets;
  pm::copy(pool.at<Root>(off), &r, sizeof r);
  // Written back here, fenced by set_root's pm::publish.
  if constexpr (B != ToyBug::unpersisted_root) pm::flush(pool.at<Root>(off), sizeof r);
  pool.set_root(off);
  return std::unique_ptr<ToyHash>(new ToyHash(pool, off));
}

template <ToyBug B>
Result<std::unique_ptr<ToyHash<B>>> ToyHash<B>::open(Pool& pool) {
  const std::uint64_t off = pool.root();
  if (off == 0 || !pool.contains(off, sizeof(Root)))
    return Error{Status::corrupt, "toy hash: no root"};
  const Root* r = pool.at<Root>(off);
  if (r->magic != toy::kRootMagic || r->nbuckets != toy::kBuckets)
    return Error{Status::corrupt, "toy hash: bad root magic or bucket count"};
  std::unique_ptr<ToyHash> t(new ToyHash(pool, off));
  auto rec = pool.allocator().recover([&](pm::BlockVisitor v) { return t->visit_blocks(v); });
  if (!rec) return rec.error();
  if constexpr (B != ToyBug::torn16) t->repair_counts();
  return t;
}

template <ToyBug B>
Bucket* ToyHash<B>::bucket_of(Key k) const {
  return &root()->buckets[fnv1a(k) % toy::kBuckets];
}

template <ToyBug B>
bool ToyHash<B>::readable(std::uint64_t off) const {
  if (off == 0 || off % 8 != 0 || !pool_.contains(off, sizeof(NodeHeader))) return false;
  const NodeHeader* n = node(off);
  return n->key_len <= kMaxKeyLength && pool_.contains(off + sizeof(NodeHeader), n->key_len);
}

template <ToyBug B>
template <class Fn>
void ToyHash<B>::walk(const Bucket* b, Fn fn) const {
  auto* link = const_cast<std::uint64_t*>(&b->head);
  // torn16 trusts the count read together with head; the others follow next to 0.
  const std::size_t limit = B == ToyBug::torn16 ? std::min<std::uint64_t>(b->count, kMaxChain)
                                                : kMaxChain;
  for (std::size_t i = 0; i < limit && readable(*link); ++i) {
    const std::uint64_t off = *link;
    if (!fn(link, off)) return;
    link = &node(off)->next;
  }
}

template <ToyBug B>
std::uint64_t ToyHash<B>::find(const Bucket* b, Key k, std::uint64_t** link_out) const {
  std::uint64_t found = 0;
  walk(b, [&](std::uint64_t* link, std::uint64_t off) {
    const NodeHeader* n = node(off);
    if ((n->flags & toy::kDead) == 0 && compare_keys(key_of(n), k) == 0) {
      found = off;
      if (link_out) *link_out = link;
      return false;
    }
    return true;
  });
  return found;
}

template <ToyBug B>
void ToyHash<B>::commit_head(Bucket* b, std::uint64_t head, std::uint64_t count) {
  if constexpr (B == ToyBug::missing_fence || B == ToyBug::torn16) {
    // By hand: head, then count, one write-back (missing_fence: and no fence).
    pm::store(&b->head, head);
    pm::store(&b->count, count);
    pm::flush(b, sizeof *b);
    if constexpr (B != ToyBug::missing_fence) pm::fence();
    return;
  }
  if constexpr (B != ToyBug::store_after_commit && B != ToyBug::extra_commit)
    pm::store(&b->count, count);  // advisory (recovery recomputes it), same line as head
  if constexpr (B == ToyBug::unfenced_publish)
    pm::commit(&b->head, head);   // BUG: the node's write-back is not fenced yet
  else
    pm::publish(&b->head, head);  // fence (the node's write-back), then commit
  if constexpr (B == ToyBug::store_after_commit) pm::store_persist(&b->count, count);
  if constexpr (B == ToyBug::extra_commit) pm::commit(&b->count, count);
  if constexpr (B == ToyBug::redundant) pm::persist(b, sizeof *b);  // nothing new: wasted
}

template <ToyBug B>
Status ToyHash<B>::add_node(Bucket* b, Key k, Value v) {
  const std::size_t size = sizeof(NodeHeader) + k.size();
  std::uint64_t off = 0;
  if (Status s = pool_.allocator().allocate(size, &off); s != Status::ok) return s;
  std::vector<std::byte> img(size);
  NodeHeader h{b->head, v, static_cast<std::uint32_t>(k.size()), 0};
  std::memcpy(img.data(), &h, sizeof h);
  if (!k.empty()) std::memcpy(img.data() + sizeof h, k.data(), k.size());
  const std::uint64_t count = b->count + 1;
  if constexpr (B == ToyBug::commit_first) commit_head(b, off, count);  // published too early
  pm::copy(node(off), img.data(), size);
  if constexpr (B == ToyBug::missing_fence || B == ToyBug::torn16) {
    pm::persist(node(off), size);
  } else if constexpr (B != ToyBug::missing_flush) {
    pm::flush(node(off), size);  // fenced by the commit's pm::publish
  }
  if constexpr (B != ToyBug::commit_first) commit_head(b, off, count);
  return Status::ok;
}

template <ToyBug B>
void ToyHash<B>::write_value(NodeHeader* n, Value v) {
  if constexpr (B == ToyBug::untracked) {
    *reinterpret_cast<volatile std::uint64_t*>(&n->value) = v;  // bypasses pm::store
    pm::persist(&n->value, sizeof v);
  } else {
    pm::commit(&n->value, v);
  }
}

template <ToyBug B>
Status ToyHash<B>::insert(Key k, Value v) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  Bucket* b = bucket_of(k);
  if (find(b, k)) return Status::exists;
  return add_node(b, k, v);
}

template <ToyBug B>
Status ToyHash<B>::upsert(Key k, Value v) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  Bucket* b = bucket_of(k);
  if (std::uint64_t off = find(b, k)) {
    write_value(node(off), v);
    return Status::ok;
  }
  return add_node(b, k, v);
}

template <ToyBug B>
Status ToyHash<B>::update(Key k, Value v) {
  const std::uint64_t off = find(bucket_of(k), k);
  if (off == 0) return Status::not_found;
  write_value(node(off), v);
  return Status::ok;
}

template <ToyBug B>
std::optional<Value> ToyHash<B>::lookup(Key k) const {
  const std::uint64_t off = find(bucket_of(k), k);
  if (off == 0) return std::nullopt;
  return node(off)->value;
}

template <ToyBug B>
Status ToyHash<B>::remove(Key k) {
  Bucket* b = bucket_of(k);
  std::uint64_t* link = nullptr;
  const std::uint64_t off = find(b, k, &link);
  if (off == 0) return Status::not_found;
  NodeHeader* n = node(off);
  if constexpr (B == ToyBug::leak_dead) {
    // Removal commits here; the unlink below is cleanup a crash may skip.
    pm::store(&n->flags, n->flags | toy::kDead);
    pm::persist(&n->flags, sizeof n->flags);
  }
  // The count is advisory (recovery recomputes it): its write-back may share the commit's
  // fence in either order.
  pm::store(&b->count, b->count - 1);
  if (!same_line(link, &b->count)) pm::flush(&b->count, sizeof b->count);
  pm::commit_sharing_fence(link, n->next);
  if constexpr (B != ToyBug::no_free) pool_.allocator().free(off);  // unlink durable: reuse is safe
  return Status::ok;
}

template <ToyBug B>
void ToyHash<B>::repair_counts() {
  bool repaired = false;
  for (Bucket& b : root()->buckets) {
    std::uint64_t n = 0;
    walk(&b, [&](std::uint64_t*, std::uint64_t) {
      ++n;
      return true;
    });
    if (n == b.count) continue;
    if constexpr (B == ToyBug::hang_recovery) {
      volatile std::uint64_t spin = 0;
      while (true) spin = spin + 1;
    }
    if constexpr (B == ToyBug::oom_recovery) {
      // Address space only (never touched): bounded by the simulator's RLIMIT_AS.
      std::vector<std::unique_ptr<char[]>> hog;
      for (;;) hog.emplace_back(new char[std::size_t{256} << 20]);
    }
    if constexpr (B == ToyBug::recurse_recovery) (void)recurse_forever(n);
    if constexpr (B == ToyBug::unsafe_repair) {
      // "Reset, then rebuild": correct only if nothing crashes in between.
      const std::uint64_t head = b.head;
      pm::store(&b.head, std::uint64_t{0});
      pm::store(&b.count, std::uint64_t{0});
      pm::persist(&b, sizeof b);
      pm::store(&b.head, head);
    }
    pm::store(&b.count, n);
    pm::flush(&b.count, sizeof n);
    repaired = true;
  }
  if (repaired) pm::fence();
}

template <ToyBug B>
std::size_t ToyHash<B>::scan(Key from, std::size_t max, Visitor v) const {
  std::vector<std::pair<std::string, Value>> all;
  for (const Bucket& b : root()->buckets)
    walk(&b, [&](std::uint64_t*, std::uint64_t off) {
      const NodeHeader* n = node(off);
      if ((n->flags & toy::kDead) == 0 && compare_keys(key_of(n), from) >= 0)
        all.emplace_back(std::string(as_string(key_of(n))), n->value);
      return true;
    });
  std::sort(all.begin(), all.end());
  std::size_t done = 0;
  for (const auto& [k, val] : all) {
    if (done == max) break;
    ++done;
    if (!v(as_key(k), val)) break;
  }
  return done;
}

template <ToyBug B>
std::size_t ToyHash<B>::range(Key lo, Key hi, Visitor v) const {
  std::size_t done = 0;
  scan(lo, SIZE_MAX, [&](Key k, Value val) {
    if (compare_keys(k, hi) >= 0) return false;
    ++done;
    return v(k, val);
  });
  return done;
}

template <ToyBug B>
IndexStats ToyHash<B>::stats() const {
  IndexStats s;
  std::uint64_t nodes = 0;
  s.pm_bytes = pool_.allocator().block_size(root_off_);
  for (const Bucket& b : root()->buckets)
    walk(&b, [&](std::uint64_t*, std::uint64_t off) {
      ++nodes;
      s.pm_bytes += pool_.allocator().block_size(off);
      if ((node(off)->flags & toy::kDead) == 0) ++s.keys;
      return true;
    });
  s.nodes["root"] = 1;
  s.nodes["node"] = nodes;
  s.avg_leaf_depth = 1;
  s.max_leaf_depth = 1;
  return s;
}

template <ToyBug B>
Result<void> ToyHash<B>::verify() const {
  const Root* r = root();
  if (r->magic != toy::kRootMagic || r->nbuckets != toy::kBuckets)
    return Error{Status::corrupt, "root magic or bucket count wrong"};
  std::set<std::string> keys;
  for (std::size_t i = 0; i < toy::kBuckets; ++i) {
    const Bucket& b = r->buckets[i];
    std::uint64_t n = 0;
    std::string problem;
    walk(&b, [&](std::uint64_t*, std::uint64_t off) {
      const NodeHeader* nd = node(off);
      ++n;
      if (fnv1a(key_of(nd)) % toy::kBuckets != i)
        problem = "node at " + std::to_string(off) + " hashes to another bucket";
      else if ((nd->flags & ~toy::kDead) != 0)
        problem = "node at " + std::to_string(off) + " has unknown flags";
      else if ((nd->flags & toy::kDead) == 0 &&
               !keys.insert(std::string(as_string(key_of(nd)))).second)
        problem = "key stored twice";
      return problem.empty() && n < kMaxChain;
    });
    if (!problem.empty()) return Error{Status::corrupt, "bucket " + std::to_string(i) + ": " + problem};
    if (n >= kMaxChain) return Error{Status::corrupt, "bucket " + std::to_string(i) + ": cycle"};
    // The chain must end in 0 (not in a pointer outside the pool).
    std::uint64_t last = b.head;
    for (std::uint64_t j = 0; j < n; ++j) last = node(last)->next;
    if (B != ToyBug::torn16 && last != 0)
      return Error{Status::corrupt, "bucket " + std::to_string(i) + ": chain ends in a bad pointer"};
    if (n != b.count)
      return Error{Status::corrupt, "bucket " + std::to_string(i) + ": count " +
                                        std::to_string(b.count) + " but " + std::to_string(n) +
                                        " nodes"};
  }
  return {};
}

template <ToyBug B>
void ToyHash<B>::dump(std::ostream& os) const {
  os << kKind << " root@" << root_off_ << "\n";
  for (std::size_t i = 0; i < toy::kBuckets; ++i) {
    const Bucket& b = root()->buckets[i];
    if (b.head == 0) continue;
    os << "  [" << i << "] count=" << b.count << ":";
    walk(&b, [&](std::uint64_t*, std::uint64_t off) {
      const NodeHeader* n = node(off);
      os << " @" << off << (n->flags & toy::kDead ? "(dead)" : "") << "=" << n->value;
      return true;
    });
    os << "\n";
  }
}

template <ToyBug B>
Result<void> ToyHash<B>::visit_blocks(BlockVisitorFn v) const {
  v(root_off_);
  for (const Bucket& b : root()->buckets)
    walk(&b, [&](std::uint64_t*, std::uint64_t off) {
      v(off);
      return true;
    });
  return {};
}

template class ToyHash<ToyBug::none>;
template class ToyHash<ToyBug::missing_flush>;
template class ToyHash<ToyBug::missing_fence>;
template class ToyHash<ToyBug::commit_first>;
template class ToyHash<ToyBug::torn16>;
template class ToyHash<ToyBug::leak_dead>;
template class ToyHash<ToyBug::untracked>;
template class ToyHash<ToyBug::redundant>;
template class ToyHash<ToyBug::no_free>;
template class ToyHash<ToyBug::unsafe_repair>;
template class ToyHash<ToyBug::unfenced_publish>;
template class ToyHash<ToyBug::store_after_commit>;
template class ToyHash<ToyBug::extra_commit>;
template class ToyHash<ToyBug::unpersisted_root>;
template class ToyHash<ToyBug::hang_recovery>;
template class ToyHash<ToyBug::oom_recovery>;
template class ToyHash<ToyBug::recurse_recovery>;

static_assert(IndexConcept<ToyHash<ToyBug::none>>);

WORT_REGISTER_INDEX(ToyHash<ToyBug::none>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::missing_flush>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::missing_fence>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::commit_first>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::torn16>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::leak_dead>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::untracked>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::redundant>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::no_free>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::unsafe_repair>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::unfenced_publish>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::store_after_commit>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::extra_commit>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::unpersisted_root>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::hang_recovery>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::oom_recovery>);
WORT_REGISTER_INDEX(ToyHash<ToyBug::recurse_recovery>);

}  // namespace wort::test
