// server/store.cc — memcached storage semantics over a persistent index (see store.h and
// item_layout.h for the layout and the commit store of each operation).
#include "server/store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "pm/persist.h"
#include "pm/pool_layout.h"

namespace wort::server {
namespace {

constexpr std::int64_t kRelativeLimit = 60 * 60 * 24 * 30;  // memcached's REALTIME_MAXDELTA
constexpr int kEvictTries = 256;      // evictions one allocation may cause
constexpr std::size_t kEvictBatch = 64;

Key key_of(std::string_view s) noexcept { return as_key(s); }

//! The one commit of an 8-byte word in an item or the meta block (nothing it depends on
//! is unfenced: the item or meta block it lives in is durable already).
template <class T>
void commit_word(T* dst, T v) noexcept {
  pm::commit(dst, v);
}

//! memcached's safe_strtoull on an item's data (which ends in "\r\n" there): digits,
//! then whitespace or the end; no '-' on a value that would be negative as signed.
bool parse_u64_value(std::string_view v, std::uint64_t* out) {
  std::string s(v);
  s += "\r\n";
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE) return false;
  if (end == s.c_str()) return false;
  if (!(std::isspace(static_cast<unsigned char>(*end)) || *end == '\0')) return false;
  if (static_cast<long long>(x) < 0 && std::memchr(s.c_str(), '-', end - s.c_str()))
    return false;
  *out = x;
  return true;
}

}  // namespace

std::int64_t Store::now() noexcept { return static_cast<std::int64_t>(std::time(nullptr)); }

std::int64_t Store::absolute_exptime(std::int64_t e) noexcept {
  if (e < 0) return 1;  // already expired
  if (e == 0) return 0;
  if (e <= kRelativeLimit) return now() + e;
  return e;  // absolute; one in the past is simply expired
}

Result<std::unique_ptr<Store>> Store::open(const StoreOptions& opts) {
  if (opts.kind == "art")
    return Error{Status::invalid_argument,
                 "index kind 'art' is volatile (DRAM only); serve needs a persistent one"};
  std::unique_ptr<Store> s(new Store());
  s->opts_ = opts;
  bool fresh = false;
  auto p = Pool::open(opts.pool_path);
  if (!p && p.status() == Status::no_such_file) {
    PoolOptions po;
    po.size = opts.pool_bytes;
    po.kind = opts.kind;
    po.values_are_blocks = true;
    p = Pool::create(opts.pool_path, po);
    fresh = true;
  }
  if (!p) return p.error();
  s->pool_ = std::move(p).value();
  if (s->pool_->kind() == "art")
    return Error{Status::invalid_argument, "pool holds the volatile index kind 'art'"};
  if (!fresh && !s->pool_->values_are_blocks())
    return Error{Status::invalid_argument,
                 "pool '" + opts.pool_path + "' was not created by wort serve "
                 "(its index values are not item blocks)"};
  auto ix = fresh ? Index::create(*s->pool_, opts.kind) : Index::open(*s->pool_);
  if (!ix) return ix.error();
  s->index_ = std::move(ix).value();
  s->classes_ = std::make_unique<pm::SizeClasses>(s->pool_->header().chunk_size);
  s->ref_bits_ = std::vector<std::atomic<std::uint64_t>>(s->pool_->size() / 16 / 64 + 1);
  if (auto r = s->init_meta(fresh); !r) return r.error();
  if (!fresh) {
    if (auto r = s->rebuild(); !r) return r.error();
    s->recovered_ = true;
  }
  return s;
}

Store::~Store() = default;

Result<void> Store::init_meta(bool fresh) {
  std::uint64_t off = 0;
  if (fresh) {
    if (pool_->allocator().allocate(sizeof(MetaBlock), &off) != Status::ok)
      return Error{Status::out_of_space, "pool too small for the server's meta block"};
    MetaBlock m{};
    m.magic = kMetaMagic;
    m.cas_hwm = 1;
    pm::copy(pool_->at<MetaBlock>(off), &m, sizeof m);
    pm::flush(pool_->at<MetaBlock>(off), sizeof m);  // ordered by the insert's pm::publish
    if (Status st = index_->insert(key_of(kMetaKey), off); st != Status::ok)
      return Error{st, "cannot insert the server's meta block"};
  } else {
    const auto v = index_->lookup(key_of(kMetaKey));
    if (!v) return Error{Status::corrupt, "pool has no server meta block (not a wort serve pool?)"};
    off = *v;
    if (off % 16 != 0 || !pool_->contains(off, sizeof(MetaBlock)) ||
        pool_->at<MetaBlock>(off)->magic != kMetaMagic)
      return Error{Status::corrupt, "server meta block at offset " + std::to_string(off) +
                                        " is damaged"};
  }
  meta_ = pool_->at<MetaBlock>(off);
  // A restart hands out cas values from the old high-water mark on: none repeats.
  const std::uint64_t start = meta_->cas_hwm;
  next_cas_ = start;
  cas_limit_ = start + kCasBatch;
  commit_word(&meta_->cas_hwm, start + kCasBatch);
  flush_cas_ = meta_->flush_cas;
  flush_at_ = meta_->flush_at;
  return {};
}

std::uint64_t Store::take_cas() {
  const std::uint64_t c = next_cas_.fetch_add(1);
  if (c >= cas_limit_.load()) {
    std::lock_guard g(cas_lock_);
    while (c >= cas_limit_.load()) {
      const std::uint64_t lim = std::max(cas_limit_.load(), c + 1) + kCasBatch;
      commit_word(&meta_->cas_hwm, lim);  // durable before an item can carry c
      cas_limit_ = lim;
    }
  }
  return c;
}

const ItemHeader* Store::item_at(std::uint64_t off) const noexcept {
  return pool_->at<ItemHeader>(off);
}

bool Store::live(const ItemHeader* h, std::int64_t t) const noexcept {
  return (h->exptime == 0 || h->exptime > t) && h->cas > flush_cas_.load(std::memory_order_relaxed);
}

void Store::mark_ref(std::uint64_t off) noexcept {
  auto& w = ref_bits_[(off >> 4) >> 6];
  const std::uint64_t m = 1ull << ((off >> 4) & 63);
  if (!(w.load(std::memory_order_relaxed) & m)) w.fetch_or(m, std::memory_order_relaxed);
}

bool Store::test_clear_ref(std::uint64_t off) noexcept {
  auto& w = ref_bits_[(off >> 4) >> 6];
  const std::uint64_t m = 1ull << ((off >> 4) & 63);
  if (!(w.load(std::memory_order_relaxed) & m)) return false;
  w.fetch_and(~m, std::memory_order_relaxed);
  return true;
}

Result<void> Store::rebuild() {
  std::string bad;
  std::uint64_t items = 0, bytes = 0, max_cas = 0;
  index_->scan(Key{}, SIZE_MAX, [&](Key k, Value off) {
    if (as_string(k) == kMetaKey) return true;
    if (off % 16 != 0 || !pool_->contains(off, sizeof(ItemHeader))) {
      bad = "item offset " + std::to_string(off) + " lies outside the pool";
      return false;
    }
    const ItemHeader* h = item_at(off);
    const std::size_t n = item_bytes(h->key_len, h->value_len);
    if (h->magic != kItemMagic || h->key_len != k.size() || !pool_->contains(off, n) ||
        pool_->allocator().block_size(off) < n ||
        std::memcmp(item_key(h), k.data(), k.size()) != 0) {
      bad = "item at offset " + std::to_string(off) + " is damaged or does not hold its key";
      return false;
    }
    ++items;
    bytes += n;
    max_cas = std::max(max_cas, h->cas);
    return true;
  });
  if (!bad.empty()) return Error{Status::corrupt, bad};
  counters_.curr_items = items;
  counters_.bytes = bytes;
  if (max_cas >= next_cas_.load()) {  // cannot happen with an intact meta block
    return Error{Status::corrupt, "an item's cas " + std::to_string(max_cas) +
                                      " is at or above the stored cas high-water mark"};
  }
  return {};
}

void Store::maybe_apply_flush() {
  const std::int64_t at = flush_at_.load(std::memory_order_relaxed);
  if (at == 0 || now() < at) return;
  std::unique_lock g(lock_);
  if (flush_at_.load() == 0 || now() < flush_at_.load()) return;
  const std::uint64_t c = take_cas();
  commit_word(&meta_->flush_cas, c);
  flush_cas_ = c;
  commit_word(&meta_->flush_at, std::int64_t{0});
  flush_at_ = 0;
}

void Store::flush_all(std::int64_t at) {
  std::unique_lock g(lock_);
  if (at != 0 && at > now()) {
    commit_word(&meta_->flush_at, at);
    flush_at_ = at;
    return;
  }
  const std::uint64_t c = take_cas();
  commit_word(&meta_->flush_cas, c);
  flush_cas_ = c;
  if (meta_->flush_at != 0) commit_word(&meta_->flush_at, std::int64_t{0});
  flush_at_ = 0;
}

const ItemHeader* Store::find_live(std::string_view key, std::uint64_t* off) {
  const auto v = index_->lookup(key_of(key));
  if (!v) return nullptr;
  const ItemHeader* h = item_at(*v);
  if (!live(h, now())) return nullptr;
  *off = *v;
  return h;
}

bool Store::get(std::string_view key, ItemFn fn, const std::int64_t* touch) {
  maybe_apply_flush();
  auto view = [&](const ItemHeader* h, bool hit) {
    ItemView iv;
    iv.key = std::string_view(item_key(h), h->key_len);
    iv.value = std::string_view(item_value(h), h->value_len);
    iv.flags = h->flags;
    iv.exptime = h->exptime;
    iv.cas = h->cas;
    iv.was_hit_before = hit;
    fn(iv);
  };
  std::uint64_t off = 0;
  if (touch) {
    std::unique_lock g(lock_);
    const ItemHeader* h = find_live(key, &off);
    if (!h) return false;
    commit_word(&pool_->at<ItemHeader>(off)->exptime, *touch);
    const bool hit = test_clear_ref(off);
    mark_ref(off);
    view(h, hit);
    return true;
  }
  std::shared_lock g(lock_);
  const ItemHeader* h = find_live(key, &off);
  if (!h) return false;
  const bool hit = test_clear_ref(off);
  mark_ref(off);
  view(h, hit);
  return true;
}

bool Store::touch(std::string_view key, std::int64_t exptime) {
  maybe_apply_flush();
  std::unique_lock g(lock_);
  std::uint64_t off = 0;
  if (!find_live(key, &off)) return false;
  commit_word(&pool_->at<ItemHeader>(off)->exptime, exptime);
  mark_ref(off);
  return true;
}

StoreResult Store::make_item(std::string_view key, std::uint32_t flags, std::int64_t exptime,
                             std::uint64_t cas, std::string_view v1, std::string_view v2,
                             std::uint64_t* off, bool locked) {
  const std::size_t n = item_bytes(key.size(), v1.size() + v2.size());
  if (!fits(key.size(), v1.size() + v2.size())) return StoreResult::too_large;
  pm::Allocator& a = pool_->allocator();
  Status s = a.allocate(n, off);
  if (s != Status::ok) {
    if (opts_.no_evict) return StoreResult::no_memory;
    std::unique_lock<std::shared_mutex> g;
    if (!locked) g = std::unique_lock(lock_);
    for (int i = 0; i < kEvictTries && s != Status::ok; ++i) {
      if (!evict_one(n, i >= kEvictTries / 2)) break;
      s = a.allocate(n, off);
    }
    if (s != Status::ok) return StoreResult::no_memory;
  }
  auto* h = pool_->at<ItemHeader>(*off);
  ItemHeader hdr{};
  hdr.cas = cas;
  hdr.exptime = exptime;
  hdr.flags = flags;
  hdr.value_len = static_cast<std::uint32_t>(v1.size() + v2.size());
  hdr.key_len = static_cast<std::uint32_t>(key.size());
  hdr.magic = kItemMagic;
  pm::copy(h, &hdr, sizeof hdr);
  char* p = item_key(h);
  pm::copy(p, key.data(), key.size());
  pm::copy(p + key.size(), v1.data(), v1.size());
  pm::copy(p + key.size() + v1.size(), v2.data(), v2.size());
  pm::flush(h, n);  // fenced by the index's commit (see commit())
  return StoreResult::stored;
}

StoreResult Store::commit(std::string_view key, std::uint64_t off, std::uint64_t old) {
  // The item must be durable before the index names it: in a values_are_blocks pool every
  // index commit that stores a value fences first (pm::publish, kit::commit_value), which
  // orders the item's pending write-back. No fence of our own.
  Status s = index_->upsert(key_of(key), off);
  for (int i = 0; s == Status::out_of_space && !opts_.no_evict && i < kEvictTries; ++i) {
    if (!evict_one(0, true)) break;
    old = 0;
    if (const auto v = index_->lookup(key_of(key))) old = *v;  // eviction may have taken it
    s = index_->upsert(key_of(key), off);
  }
  if (s != Status::ok) {
    pool_->allocator().free(off);
    return StoreResult::no_memory;
  }
  const ItemHeader* h = item_at(off);
  counters_.bytes += item_bytes(h->key_len, h->value_len);
  ++counters_.total_items;
  if (old != 0) {
    const ItemHeader* o = item_at(old);
    counters_.bytes -= item_bytes(o->key_len, o->value_len);
    pool_->allocator().free(old);  // the upsert is durable and we hold the exclusive lock
  } else {
    ++counters_.curr_items;
  }
  return StoreResult::stored;
}

void Store::unlink(std::string_view key, std::uint64_t off) {
  if (index_->remove(key_of(key)) != Status::ok) return;
  const ItemHeader* o = item_at(off);
  counters_.bytes -= item_bytes(o->key_len, o->value_len);
  --counters_.curr_items;
  pool_->allocator().free(off);
}

bool Store::evict_one(std::size_t want, bool any_class) {
  const std::uint32_t want_block =
      want == 0 ? 0
                : (want <= classes_->max_small() ? classes_->size(classes_->class_of(want)) : 0);
  const std::size_t limit = 2 * counters_.curr_items.load() + 2 * kEvictBatch;
  const std::int64_t t = now();
  std::size_t visited = 0;
  while (visited < limit) {
    std::vector<std::pair<std::string, std::uint64_t>> batch;
    index_->scan(key_of(clock_hand_), kEvictBatch + 1, [&](Key k, Value v) {
      if (!batch.empty() || as_string(k) != clock_hand_)
        batch.emplace_back(std::string(as_string(k)), v);
      return batch.size() < kEvictBatch;
    });
    if (batch.empty()) {
      if (clock_hand_.empty()) return false;  // nothing in the cache at all
      clock_hand_.clear();                    // wrap around
      continue;
    }
    for (auto& [k, off] : batch) {
      ++visited;
      clock_hand_ = k;
      if (k == kMetaKey) continue;
      const ItemHeader* h = item_at(off);
      const bool dead = !live(h, t);
      if (!dead && test_clear_ref(off)) continue;  // second chance
      const std::size_t bs = pool_->allocator().block_size(off);
      const bool fits = any_class || dead || want == 0 ||
                        (want_block != 0 ? bs == want_block : bs >= want);
      if (!fits) continue;
      unlink(k, off);
      if (dead) ++counters_.reclaimed; else ++counters_.evictions;
      return true;
    }
  }
  return false;
}

StoreResult Store::store(StoreMode mode, std::string_view key, std::uint32_t flags,
                         std::int64_t exptime, std::string_view value, std::uint64_t cas_in,
                         std::uint64_t* cas_out) {
  maybe_apply_flush();
  std::shared_lock building(build_gate_);
  const bool concat = mode == StoreMode::append || mode == StoreMode::prepend;
  std::uint64_t off = 0;
  std::uint64_t cas = 0;
  if (!concat) {  // build and flush the new item before taking the lock
    cas = take_cas();
    const StoreResult r = make_item(key, flags, exptime, cas, value, {}, &off, false);
    if (r != StoreResult::stored) {
      if (mode == StoreMode::set) {  // memcached drops the old value of a failed set
        std::unique_lock g(lock_);
        if (const auto v = index_->lookup(key_of(key))) unlink(key, *v);
      }
      return r;
    }
  }
  std::unique_lock g(lock_);
  std::uint64_t old = 0;
  if (const auto v = index_->lookup(key_of(key))) old = *v;
  const ItemHeader* o = old ? item_at(old) : nullptr;
  const bool hit = o && live(o, now());
  StoreResult fail = StoreResult::stored;
  if (mode == StoreMode::cas) {
    if (!hit) fail = StoreResult::not_found;
    else if (o->cas != cas_in) fail = StoreResult::exists;
  } else if (cas_in != 0) {
    if (!hit) fail = StoreResult::not_found;
    else if (o->cas != cas_in) fail = StoreResult::exists;
  }
  if (fail == StoreResult::stored) {
    if (mode == StoreMode::add && hit) fail = StoreResult::not_stored;
    if ((mode == StoreMode::replace || concat) && !hit) fail = StoreResult::not_stored;
  }
  if (fail != StoreResult::stored) {
    if (off) pool_->allocator().free(off);  // never published
    if (mode == StoreMode::add && hit) mark_ref(old);
    return fail;
  }
  if (concat) {
    cas = take_cas();
    const std::string_view ov(item_value(o), o->value_len);
    const StoreResult r =
        mode == StoreMode::append
            ? make_item(key, o->flags, o->exptime, cas, ov, value, &off, true)
            : make_item(key, o->flags, o->exptime, cas, value, ov, &off, true);
    if (r != StoreResult::stored) return r;
    // Eviction inside make_item may have removed the old item.
    old = 0;
    if (const auto v = index_->lookup(key_of(key))) old = *v;
  }
  const StoreResult r = commit(key, off, old);
  if (r == StoreResult::stored) {
    mark_ref(off);
    if (cas_out) *cas_out = cas;
  }
  return r;
}

StoreResult Store::remove(std::string_view key, std::uint64_t cas_in) {
  maybe_apply_flush();
  std::unique_lock g(lock_);
  const auto v = index_->lookup(key_of(key));
  if (!v) return StoreResult::not_found;
  const ItemHeader* h = item_at(*v);
  if (!live(h, now())) {
    unlink(key, *v);  // lazily reclaim the expired item
    ++counters_.reclaimed;
    return StoreResult::not_found;
  }
  if (cas_in != 0 && h->cas != cas_in) return StoreResult::exists;
  unlink(key, *v);
  return StoreResult::stored;
}

DeltaResult Store::delta(std::string_view key, bool incr, std::uint64_t d, std::uint64_t* result,
                         std::uint64_t* cas_out, std::uint64_t cas_in, bool create,
                         std::uint64_t initial, std::int64_t create_exptime) {
  maybe_apply_flush();
  std::unique_lock g(lock_);
  std::uint64_t old = 0;
  const ItemHeader* o = nullptr;
  if (const auto v = index_->lookup(key_of(key))) {
    old = *v;
    o = item_at(old);
    if (!live(o, now())) o = nullptr;
  }
  std::uint64_t x = 0;
  std::string text;
  std::uint32_t flags = 0;
  std::int64_t exptime = create_exptime;
  if (!o) {
    if (!create) return DeltaResult::not_found;
    x = initial;
    text = std::to_string(x);
  } else {
    if (cas_in != 0 && o->cas != cas_in) return DeltaResult::exists;
    if (o->value_len == 0 ||
        !parse_u64_value(std::string_view(item_value(o), o->value_len), &x))
      return DeltaResult::non_numeric;
    x = incr ? x + d : (d > x ? 0 : x - d);
    text = std::to_string(x);
    // memcached rewrites a shorter number in place, padded with spaces to the old length.
    if (text.size() < o->value_len) text.append(o->value_len - text.size(), ' ');
    flags = o->flags;
    exptime = o->exptime;
  }
  const std::uint64_t cas = take_cas();
  std::uint64_t off = 0;
  if (make_item(key, flags, exptime, cas, text, {}, &off, true) != StoreResult::stored)
    return DeltaResult::no_memory;
  old = 0;
  if (const auto v = index_->lookup(key_of(key))) old = *v;
  if (commit(key, off, old) != StoreResult::stored) return DeltaResult::no_memory;
  mark_ref(off);
  *result = x;
  if (cas_out) *cas_out = cas;
  return DeltaResult::ok;
}

std::size_t Store::sweep(std::size_t budget) {
  maybe_apply_flush();
  std::vector<std::pair<std::string, std::uint64_t>> dead;
  {
    std::shared_lock g(lock_);
    const std::int64_t t = now();
    std::size_t seen = 0;
    std::string last;
    index_->scan(key_of(sweep_hand_), budget, [&](Key k, Value v) {
      ++seen;
      last.assign(as_string(k));
      if (last != kMetaKey && !live(item_at(v), t)) dead.emplace_back(last, v);
      return true;
    });
    sweep_hand_ = seen < budget ? std::string() : last;
  }
  std::size_t n = 0;
  std::unique_lock g(lock_);
  const std::int64_t t = now();
  for (auto& [k, off] : dead) {
    const auto v = index_->lookup(key_of(k));
    if (!v || *v != off || live(item_at(off), t)) continue;
    unlink(k, off);
    ++counters_.reclaimed;
    ++n;
  }
  return n;
}

pm::AuditReport Store::audit() {
  std::unique_lock gate(build_gate_);
  std::unique_lock g(lock_);
  // What kit::walk_all does for a concrete index: its blocks, then each value's block.
  return pool_->allocator().audit([&](pm::BlockVisitor v) -> Result<void> {
    if (auto r = index_->visit_blocks(v); !r) return r;
    index_->scan(Key{}, SIZE_MAX, [&](Key, Value off) {
      v(off);
      return true;
    });
    return {};
  });
}

Result<void> Store::verify() {
  std::unique_lock g(lock_);
  if (auto r = index_->verify(); !r) return r;
  return rebuild();
}

}  // namespace wort::server
