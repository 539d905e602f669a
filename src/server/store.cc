// server/store.cc — memcached storage semantics over a persistent index (see store.h and
// item_layout.h for the layout and the commit store of each operation).
#include "server/store.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>

#include "index/registry.h"
#include "pm/chunk_size.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "store/block_pool.h"
#include "store/value_block.h"

namespace wort::server {
namespace {

constexpr std::int64_t kRelativeLimit = 60 * 60 * 24 * 30;  // memcached's REALTIME_MAXDELTA
constexpr std::size_t kEvictBatch = 64;   // keys the CLOCK hand reads per index scan
constexpr std::size_t kEvictAhead = 32;   // victims one failed allocation evicts
constexpr int kEvictAheadI = static_cast<int>(kEvictAhead);
constexpr std::size_t kEvictScanMax = 8192;  // keys one class-wanting eviction may visit
constexpr int kEvictRounds = 8;           // rounds of eviction one allocation may run
constexpr int kBudgetRounds = 64;         // rounds of eviction one item budget check may run
constexpr int kEvictTries = 256;          // evictions one index insert may cause
constexpr int kEvictNear = 16;            // of which neighbours of the key (evict_near)
constexpr std::size_t kBallastBlocks = 4; // whole-chunk ballast blocks (see store.h)

Key key_of(std::string_view s) noexcept { return as_key(s); }

//! The stripe the calling thread holds (concurrent path), so that its own eviction skips
//! it: a writer reads its key's current item without a pin, which is safe only while no
//! other thread (nor its own evictor) can unlink it.
thread_local StripeLock* tls_held_stripe = nullptr;

//! An item's exptime, the one header word written in place on a live item (touch): an
//! atomic load, as pm::store / pm::commit_nt write it.
std::int64_t exptime_of(const ItemHeader* h) noexcept {
  return __atomic_load_n(&h->exptime, __ATOMIC_RELAXED);
}

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

std::string servable_kinds() {
  std::string s;
  for (std::string_view k : kServableKinds) (s += s.empty() ? "" : ", ") += k;
  return s;
}

class Store::WriteLock {
 public:
  //! Concurrent path: the key's stripe; global-lock path: the exclusive side.
  WriteLock(Store& s, std::string_view key) {
    if (s.concurrent_) {
      stripe_ = std::unique_lock(s.stripe_of(key));
      prev_ = tls_held_stripe;
      tls_held_stripe = stripe_.mutex();
    } else {
      excl_ = std::unique_lock(s.lock_);
    }
  }
  ~WriteLock() {
    if (stripe_.owns_lock()) tls_held_stripe = prev_;
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  std::unique_lock<StripeLock> stripe_;
  std::unique_lock<std::shared_mutex> excl_;
  StripeLock* prev_ = nullptr;
};

class Store::ReadLock {
 public:
  //! Concurrent path: an epoch pin (no lock); global-lock path: the shared side.
  explicit ReadLock(Store& s) {
    if (s.concurrent_) pin_.emplace(*s.items_);
    else shared_ = std::shared_lock(s.lock_);
  }

 private:
  std::optional<kit::EpochReclaimer::Pin> pin_;
  std::shared_lock<std::shared_mutex> shared_;
};

class Store::AllStripes {
 public:
  explicit AllStripes(Store& s) : s_(s) {
    for (std::size_t i = 0; i < kStripes; ++i) s_.stripes_[i].m.lock();
  }
  ~AllStripes() {
    for (std::size_t i = kStripes; i-- > 0;) s_.stripes_[i].m.unlock();
  }
  AllStripes(const AllStripes&) = delete;
  AllStripes& operator=(const AllStripes&) = delete;

 private:
  Store& s_;
};

StripeLock& Store::stripe_of(std::string_view key) noexcept {
  return stripes_[std::hash<std::string_view>{}(key) % kStripes].m;
}

namespace {

//! Only indexes whose every value commit fences first in a values_are_blocks pool (new keys
//! through pm::publish or a fenced write-back, overwrites through kit::commit_value or
//! roart's publish_nt) order an item's write-back before the index names it:
//! tests/server/item_crash_test.cc checks each.
bool servable(std::string_view k) {
  for (std::string_view ok : kServableKinds)
    if (k == ok) return true;
  return false;
}

//! Index room per item-budget byte, in 1/16: the index's bytes per 176-byte item block
//! (32-byte keys, 100 B values; src/server/README.md, Items per megabyte) with a margin.
std::uint64_t index_room_16ths(std::string_view kind) {
  if (kind == "fastfair" || kind == "fptree") return 10;  // 93 B: 0.53
  if (kind == "wbtree" || kind == "nvtree") return 12;    // 108-114 B: 0.61-0.65
  return 8;                                               // the ARTs, 64-70 B: 0.36-0.40
}

}  // namespace

std::uint64_t pool_bytes_for(std::string_view kind, std::uint64_t item_limit) {
  const std::uint64_t base = item_limit + item_limit / 16 * index_room_16ths(kind);
  // 16 chunks of the size Pool::create chooses for about this size: the ballast (4) and
  // the partly used chunks of the classes.
  return base + item_limit / 32 + 16 * std::uint64_t{pm::auto_chunk_size(base)};
}

Result<std::unique_ptr<Store>> Store::open(const StoreOptions& opts) {
  if (opts.kind == "art")
    return Error{Status::invalid_argument,
                 "index kind 'art' is volatile (DRAM only); serve needs a persistent one"};
  if (!servable(opts.kind))
    return Error{Status::invalid_argument,
                 "index kind '" + opts.kind + "' cannot serve: " + servable_kinds() +
                     " (an index must order the item's write-back before its commit)"};
  std::unique_ptr<Store> s(new Store());
  s->opts_ = opts;
  bool fresh = false;
  if (auto r = s->open_pool(&fresh); !r) return r.error();
  // A start that created the pool and then fails leaves no pool behind.
  struct RemoveIfCreated {
    bool armed;
    const std::string& path;
    Store* s;
    ~RemoveIfCreated() {
      if (!armed) return;
      s->index_.reset();
      s->pool_.reset();
      std::remove(path.c_str());
    }
  } cleanup{fresh, opts.pool_path, s.get()};
  bool init = fresh;
  if (auto r = s->open_index(fresh, &init); !r) return r.error();
  s->init_dram_state();
  // (A pool whose first start was killed before its meta block: no budget, its room only;
  // the -m it was created for is not known.)
  if (auto r = s->init_meta(init, fresh ? opts.item_limit : 0); !r) return r.error();
  if (!fresh) {
    if (auto r = s->rebuild(true); !r) return r.error();
    s->recovered_ = true;
  }
  s->ballast_.assign(kBallastBlocks, 0);
  s->take_ballast();
  cleanup.armed = false;
  return s;
}

Result<void> Store::open_pool(bool* fresh) {
  auto p = opts_.image.empty() ? Pool::open(opts_.pool_path)
                               : Pool::attach(opts_.image, {}, opts_.pool_path);
  if (!p && p.status() == Status::no_such_file) {
    if (opts_.open_only || !opts_.image.empty())
      return Error{Status::no_such_file, "no pool at '" + opts_.pool_path + "'"};
    PoolOptions po;
    po.size = opts_.pool_bytes;
    po.kind = opts_.kind;
    po.values_are_blocks = true;
    p = Pool::create(opts_.pool_path, po);
    *fresh = true;
  }
  if (!p) return p.error();
  pool_ = std::move(p).value();
  return {};
}

Result<void> Store::open_index(bool fresh, bool* init) {
  if (!servable(pool_->kind()))
    return Error{Status::invalid_argument,
                 "pool holds index kind '" + std::string(pool_->kind()) + "', which cannot serve"};
  if (!fresh && !pool_->values_are_blocks())
    return Error{Status::invalid_argument,
                 "pool '" + opts_.pool_path + "' was not created by wort serve "
                 "(its index values are not item blocks)"};
  // A server pool whose first start was killed before it was done (nothing was ever
  // acknowledged): finished, not refused (store/block_pool.h). Any other pool without a
  // meta block is refused (init_meta).
  auto ix = store::open_block_index(*pool_, kMetaKey, init);
  if (!ix) return ix.error();
  index_ = std::move(ix).value();
  return {};
}

void Store::init_dram_state() {
  // The index's own concurrency, where it has it (see store.h).
  const registry::Entry* entry = registry::find(index_->kind());
  concurrent_ = entry != nullptr && entry->concurrent && !opts_.global_lock;
  if (concurrent_) {
    stripes_ = std::make_unique<Stripe[]>(kStripes);
    items_ = std::make_unique<kit::EpochReclaimer>(&kit::free_to_allocator,
                                                   &pool_->allocator());
  }
  classes_ = std::make_unique<pm::SizeClasses>(pool_->header().chunk_size);
  classes_chunk_size_ = pool_->header().chunk_size;
  ref_bits_ = kit::ZeroedArray<std::uint64_t>(pool_->size() / 16 / 64 + 1);
  token_bits_ = kit::ZeroedArray<std::uint64_t>(pool_->size() / 16 / 64 + 1);
  access_ = kit::ZeroedArray<std::uint32_t>(pool_->size() / 32 + 1);
  epoch_ = now() - 1;  // access seconds are > 0 (0 = unknown, e.g. after a restart)
}

Store::~Store() = default;

Result<void> Store::init_meta(bool fresh, std::uint64_t item_limit) {
  std::uint64_t off = 0;
  if (fresh) {
    if (pool_->allocator().allocate(sizeof(MetaBlock), &off) != Status::ok)
      return Error{Status::out_of_space, "pool too small for the server's meta block"};
    MetaBlock m{};
    m.magic = kMetaMagic;
    m.cas_hwm = 1;
    m.item_limit = item_limit;
    m.version = kServerVersion;
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
    if (auto r = check_version(pool_->at<MetaBlock>(off)->version); !r) return r;
  }
  meta_ = pool_->at<MetaBlock>(off);
  // (A budget larger than the pool is no budget a pool was ever created with.)
  if (meta_->item_limit > pool_->size())
    return Error{Status::corrupt, "server meta block's item limit " +
                                      std::to_string(meta_->item_limit) + " exceeds the pool"};
  item_limit_ = meta_->item_limit;
  // A restart hands out cas values from the old high-water mark on: none repeats.
  const std::uint64_t start = meta_->cas_hwm;
  next_cas_ = start;
  cas_limit_ = start + kCasBatch;
  commit_word(&meta_->cas_hwm, start + kCasBatch);
  flush_cas_ = meta_->flush_cas;
  flush_at_ = meta_->flush_at;
  return {};
}

Result<void> Store::check_version(std::uint64_t v) const {
  if (v == kServerVersion) return {};
  if (v > kServerVersion)
    return Error{Status::newer_version, "pool '" + opts_.pool_path + "' holds items of format " +
                                            std::to_string(v) + "; this build reads format " +
                                            std::to_string(kServerVersion)};
  // Format 1 (the word was reserved, zero): items without a checksum. Never read.
  return Error{Status::not_a_pool,
               "pool '" + opts_.pool_path + "' holds items of an older format (1, without "
               "checksums); this build reads format " + std::to_string(kServerVersion) +
               " only: start with a new pool (move this one aside; the cache refills)"};
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
  const std::int64_t e = exptime_of(h);
  return (e == 0 || e > t) && h->cas > flush_cas_.load(std::memory_order_relaxed);
}

void Store::mark_ref(std::uint64_t off) noexcept {
  auto w = ref_bits_[(off >> 4) >> 6];
  const std::uint64_t m = 1ull << ((off >> 4) & 63);
  if (!(w.load(std::memory_order_relaxed) & m)) w.fetch_or(m, std::memory_order_relaxed);
}

bool Store::test_clear_ref(std::uint64_t off) noexcept {
  auto w = ref_bits_[(off >> 4) >> 6];
  const std::uint64_t m = 1ull << ((off >> 4) & 63);
  if (!(w.load(std::memory_order_relaxed) & m)) return false;
  w.fetch_and(~m, std::memory_order_relaxed);
  return true;
}

void Store::init_access(std::uint64_t off, bool token) noexcept {
  access_[off >> 5].store(static_cast<std::uint32_t>(now() - epoch_) & 0x7fffffffu,
                          std::memory_order_relaxed);
  auto w = token_bits_[(off >> 4) >> 6];
  const std::uint64_t m = 1ull << ((off >> 4) & 63);
  if (token) w.fetch_or(m, std::memory_order_relaxed);
  else if (w.load(std::memory_order_relaxed) & m) w.fetch_and(~m, std::memory_order_relaxed);
}

void Store::note_access(std::uint64_t off, bool update, ItemView* v) noexcept {
  auto a = access_[off >> 5];
  const std::uint32_t old = a.load(std::memory_order_relaxed);
  const std::uint32_t sec = static_cast<std::uint32_t>(now() - epoch_) & 0x7fffffffu;
  if (v) {
    v->was_hit_before = (old & 0x80000000u) != 0;
    const std::uint32_t last = old & 0x7fffffffu;
    v->last_access = last == 0 || last > sec ? 0 : sec - last;
  }
  if (!update) return;
  const std::uint32_t now_v = sec | 0x80000000u;
  if (old != now_v) a.store(now_v, std::memory_order_relaxed);  // no write when unchanged
  mark_ref(off);
}

bool Store::token_sent(std::uint64_t off) const noexcept {
  const auto w = token_bits_[(off >> 4) >> 6];
  return (w.load(std::memory_order_relaxed) >> ((off >> 4) & 63)) & 1;
}

void Store::set_token(std::uint64_t off) noexcept {
  token_bits_[(off >> 4) >> 6].fetch_or(1ull << ((off >> 4) & 63), std::memory_order_relaxed);
}

ItemView Store::view_of(std::uint64_t off) const noexcept {
  const ItemHeader* h = item_at(off);
  ItemView iv;
  iv.key = std::string_view(item_key(h), h->key_len);
  iv.value = std::string_view(item_value(h), h->value_len);
  iv.flags = h->flags;
  iv.exptime = exptime_of(h);
  iv.cas = h->cas;
  iv.iflags = h->iflags;
  iv.token_sent = token_sent(off);
  return iv;
}

void Store::add_block_info(std::uint64_t off, ItemView* iv) const noexcept {
  iv->block_bytes = pool_->allocator().block_size(off);
  iv->size_class = iv->block_bytes <= classes_->max_small()
                       ? static_cast<std::uint32_t>(classes_->apart_class_of(iv->block_bytes) -
                                                    classes_->apart_first()) + 1
                       : 0;
}

Result<void> Store::rebuild(bool at_open) {
  std::string bad;
  std::uint64_t items = 0, bytes = 0, max_cas = 0;
  index_->scan(Key{}, SIZE_MAX, [&](Key k, Value off) {
    if (as_string(k) == kMetaKey) return true;
    // Every item checked whole (store/value_block.h), its checksum too: a damaged one
    // refuses the pool, as a bad magic does.
    const ItemHeader* h = nullptr;
    const store::BlockCheck c = store::check_block(*pool_, off, as_string(k), pool_->size(), &h);
    const std::size_t n = h ? item_bytes(h->key_len, h->value_len) : 0;
    if (c != store::BlockCheck::ok || pool_->allocator().block_size(off) < n) {
      bad = "item at offset " + std::to_string(off) + " is damaged (" +
            (c == store::BlockCheck::ok ? "larger than its block" : store::to_string(c)) + ")";
      return false;
    }
    ++items;
    bytes += n;
    max_cas = std::max(max_cas, h->cas);
    if (at_open) note_block(off, +1);  // (a failed open discards the count)
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
  std::unique_lock<std::shared_mutex> g;
  std::unique_lock<std::mutex> fg;
  if (concurrent_) fg = std::unique_lock(flush_lock_);
  else g = std::unique_lock(lock_);
  if (flush_at_.load() == 0 || now() < flush_at_.load()) return;
  const std::uint64_t c = take_cas();
  commit_word(&meta_->flush_cas, c);
  flush_cas_ = c;
  commit_word(&meta_->flush_at, std::int64_t{0});
  flush_at_ = 0;
}

void Store::flush_all(std::int64_t at) {
  // Concurrent path: no lock on the index. Readers and writers see the flush through
  // flush_cas_, stored after its commit; an item committed with a cas at or below it is dead.
  std::unique_lock<std::shared_mutex> g;
  std::unique_lock<std::mutex> fg;
  if (concurrent_) fg = std::unique_lock(flush_lock_);
  else g = std::unique_lock(lock_);
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

const ItemHeader* Store::checked_item(std::string_view key, std::uint64_t off) noexcept {
  const ItemHeader* h = nullptr;
  if (store::check_block(*pool_, off, key, pool_->size(), &h) == store::BlockCheck::ok)
    return h;
  ++counters_.items_corrupt;  // a miss: its bytes are never answered nor copied
  return nullptr;
}

const ItemHeader* Store::find_live(std::string_view key, std::uint64_t* off) {
  const auto v = index_->lookup(key_of(key));
  if (!v) return nullptr;
  const ItemHeader* h = checked_item(key, *v);
  if (!h || !live(h, now())) return nullptr;
  *off = *v;
  return h;
}

bool Store::get(std::string_view key, ItemFn fn, const std::int64_t* touch) {
  if (key == kMetaKey) return false;  // the server's own block is no cache item
  maybe_apply_flush();
  std::uint64_t off = 0;
  if (touch) {
    WriteLock g(*this, key);
    if (!find_live(key, &off)) return false;
    set_exptime(off, *touch);
    ItemView iv = view_of(off);
    note_access(off, true, &iv);
    fn(iv);
    return true;
  }
  ReadLock g(*this);
  if (!find_live(key, &off)) return false;
  ItemView iv = view_of(off);
  note_access(off, true, &iv);
  fn(iv);
  return true;
}

bool Store::touch(std::string_view key, std::int64_t exptime) {
  if (key == kMetaKey) return false;
  maybe_apply_flush();
  WriteLock g(*this, key);
  std::uint64_t off = 0;
  if (!find_live(key, &off)) return false;
  set_exptime(off, exptime);
  note_access(off, true, nullptr);
  return true;
}

StoreResult Store::make_item(std::string_view key, std::uint32_t flags, std::int64_t exptime,
                             std::uint64_t cas, std::string_view v1, std::string_view v2,
                             std::uint64_t* off, bool locked, std::uint16_t iflags) {
  const std::size_t n = item_bytes(key.size(), v1.size() + v2.size());
  if (!fits(key.size(), v1.size() + v2.size())) return StoreResult::too_large;
  if (!budget_room(n, locked)) {
    ++counters_.refused_budget;
    return StoreResult::no_memory;
  }
  if (allocate_item(n, off, locked) != Status::ok) {
    ++counters_.refused_alloc;
    return StoreResult::no_memory;
  }
  note_block(*off, +1);
  const ItemFields f{cas, exptime, flags, iflags};
  store::write_block(pool_->at<char>(*off), item_header(f, key.size(), v1.size() + v2.size()),
                     key, v1, v2);
  // (flushed, not fenced: the index's commit orders it; see store/value_block.h, commit())
  init_access(*off, false);  // DRAM only: a reused block starts unfetched, no token sent
  return StoreResult::stored;
}

Store::EvictLocks Store::lock_for_eviction(bool locked) {
  EvictLocks l;
  if (concurrent_) l.evict = std::unique_lock(evict_lock_);
  else if (!locked) l.global = std::unique_lock(lock_);
  return l;
}

Status Store::allocate_item(std::size_t n, std::uint64_t* off, bool locked) {
  pm::Allocator& a = pool_->allocator();
  // Items live in apart chunks (no index node among them), so that evicting the items of a
  // chunk frees the chunk.
  Status s = a.allocate_apart(n, off);
  if (s == Status::ok) return s;
  if (opts_.no_evict) return s;
  EvictLocks l = lock_for_eviction(locked);
  // Another thread may have evicted while this one waited for the lock.
  s = a.allocate_apart(n, off);
  // Evict ahead: a batch of victims of the wanted size class, so that the next sets of
  // this class allocate without another failed attempt (a failed allocation in a full
  // pool scans the allocator's free lists). If the class has none (a new size) or the
  // freed blocks went to other threads' sets meanwhile, the items of one window of
  // chunks: a free chunk serves any class (evict_chunk). Again while either evicts (other
  // threads' allocations may take what was freed), a bounded number of rounds.
  std::vector<std::uint64_t> tried;  // windows evict_chunk evacuated in these rounds
  for (int round = 0; round < kEvictRounds && s != Status::ok; ++round) {
    const bool some = evict_some(n, false, kEvictAhead) != 0;
    if (some && (s = a.allocate_apart(n, off)) == Status::ok) break;
    if (evict_chunk(n, &tried) == 0 && !some) break;
    s = a.allocate_apart(n, off);
  }
  if (s != Status::ok) return s;
  // A remove used a ballast block (ART+CoW): take it back while eviction is under way.
  if (ballast_short_.load(std::memory_order_relaxed)) {
    take_ballast();
    if (ballast_short_.load(std::memory_order_relaxed) && evict_chunk(0) != 0) take_ballast();
  }
  return s;
}

std::size_t Store::block_for(std::size_t n) const noexcept {
  if (n <= classes_->max_small()) return classes_->size(classes_->apart_class_of(n));
  return (n + classes_chunk_size_ - 1) / classes_chunk_size_ * classes_chunk_size_;
}

bool Store::budget_room(std::size_t n, bool locked) {
  const std::uint64_t bs = block_for(n);
  auto lacking = [&]() -> std::uint64_t {
    const std::uint64_t held = item_blocks_.load(std::memory_order_relaxed);
    return held + bs > item_limit_ ? held + bs - item_limit_ : 0;
  };
  if (item_limit_ == 0 || lacking() == 0) return true;
  if (opts_.no_evict) return false;
  EvictLocks l = lock_for_eviction(locked);
  // The CLOCK's victims of any size class (memcached's -m is one budget for all classes):
  // the bytes lacking at the average item block, at least a batch (evict ahead, so that
  // the next sets find room without evicting). A size class grows as its sets come; the
  // freed blocks stay in their chunks, and where the pool itself runs out of room
  // allocate_item frees whole chunks.
  for (int round = 0; round < kBudgetRounds && lacking() != 0; ++round) {
    const std::uint64_t items = std::max<std::uint64_t>(1, counters_.curr_items.load());
    const std::uint64_t avg = std::max<std::uint64_t>(48, item_blocks_.load() / items);
    const std::uint64_t want = std::max<std::uint64_t>(kEvictAhead, (lacking() + avg - 1) / avg);
    if (evict_some(0, true, want) == 0) break;
  }
  return lacking() == 0;
}

void Store::note_block(std::uint64_t off, int sign) noexcept {
  const std::uint64_t bs = pool_->allocator().block_size(off);
  if (sign > 0) item_blocks_.fetch_add(bs, std::memory_order_relaxed);
  else item_blocks_.fetch_sub(bs, std::memory_order_relaxed);
}

void Store::free_unpublished(std::uint64_t off) noexcept {
  note_block(off, -1);
  pool_->allocator().free(off);  // never published: no reader holds it
}

StoreResult Store::commit(std::string_view key, std::uint64_t off, std::uint64_t old) {
  // The item must be durable before the index names it: in a values_are_blocks pool every
  // index commit that stores a value fences first (pm::publish, kit::commit_value), which
  // orders the item's pending write-back. No fence of our own.
  Status s = index_->upsert(key_of(key), off);
  std::vector<std::uint64_t> tried;  // windows evict_chunk evacuated for this insert
  int chunk_calls = 0;
  int i = 0;
  if (s == Status::out_of_space && !opts_.no_evict) {
    gather_free_blocks();
    s = index_->upsert(key_of(key), off);
  }
  for (; s == Status::out_of_space && !opts_.no_evict && i < kEvictTries; ++i) {
    // The index needs a node to take this key: first the keys that follow it (they sit in
    // the node that is full, so the key fits without a new node: a trie's node that would
    // grow, a B-tree's leaf that would split), then the items of a whole chunk (free for
    // any class), then one CLOCK victim at a time.
    std::unique_lock<std::mutex> eg;
    if (concurrent_) eg = std::unique_lock(evict_lock_);
    // (Not while the ballast is short: ART+CoW's removes would spend it.)
    const bool near = i < kEvictNear && !ballast_short_.load(std::memory_order_relaxed);
    // (At most kEvictRounds chunk evictions for one insert: an index that needs something
    // a free chunk does not give, e.g. a longer span, must not empty the cache.)
    auto chunk = [&] { return chunk_calls++ < kEvictRounds && evict_chunk(0, &tried) != 0; };
    if ((!near || evict_near(key) == 0) && !chunk() && evict_some(0, true, 1) == 0) break;
    if (ballast_short_.load(std::memory_order_relaxed)) take_ballast();
    old = 0;
    if (const auto v = index_->lookup(key_of(key))) old = *v;  // eviction may have taken it
    s = index_->upsert(key_of(key), off);
  }
  if (s != Status::ok) {
    ++counters_.refused_index;
    free_unpublished(off);
    return StoreResult::no_memory;
  }
  const ItemHeader* h = item_at(off);
  counters_.bytes += item_bytes(h->key_len, h->value_len);
  ++counters_.total_items;
  if (old != 0) {
    const ItemHeader* o = item_at(old);
    counters_.bytes -= item_bytes(o->key_len, o->value_len);
    release_block(old);  // the upsert is durable
  } else {
    ++counters_.curr_items;
  }
  return StoreResult::stored;
}

bool Store::unlink(std::string_view key, std::uint64_t off) {
  if (remove_key(key) != Status::ok) return false;
  const ItemHeader* o = item_at(off);
  counters_.bytes -= item_bytes(o->key_len, o->value_len);
  --counters_.curr_items;
  release_block(off);
  return true;
}

Status Store::remove_key(std::string_view key) {
  Status st = index_->remove(key_of(key));
  if (st == Status::out_of_space) {
    gather_free_blocks();
    st = index_->remove(key_of(key));
  }
  while (st == Status::out_of_space) {
    // ART+CoW's remove copies a node: in a full pool it needs a block before it can free
    // one. Give a ballast chunk back and try again (another thread may take the chunk
    // first: then the next one).
    {
      std::lock_guard g(ballast_lock_);
      auto it = std::find_if(ballast_.begin(), ballast_.end(),
                             [](std::uint64_t b) { return b != 0; });
      if (it == ballast_.end()) return st;
      pool_->allocator().free(*it);  // linked nowhere, read by no one: freed at once
      *it = 0;
      ballast_short_.store(true, std::memory_order_relaxed);
    }
    st = index_->remove(key_of(key));
  }
  return st;
}

void Store::gather_free_blocks() {
  index_->reclaim_retired();
  // Global-lock path only: the exclusive lock is held, so no other worker is inside the
  // allocator's thread-cached paths (every index call of theirs takes the lock).
  if (!concurrent_) pool_->allocator().drain_all_caches();
}

void Store::take_ballast() noexcept {
  std::lock_guard g(ballast_lock_);
  bool short_ = false;
  for (std::uint64_t& b : ballast_) {
    if (b != 0) continue;
    // A whole chunk (a large block of one chunk): given back, it serves any size class.
    if (pool_->allocator().allocate(classes_->max_small() + 1, &b) != Status::ok) {
      b = 0;
      short_ = true;
      break;
    }
  }
  ballast_short_.store(short_, std::memory_order_relaxed);
}

std::size_t Store::evict_near(std::string_view key) {
  std::vector<std::pair<std::string, std::uint64_t>> next;
  {
    std::optional<kit::EpochReclaimer::Pin> pin;
    if (concurrent_) pin.emplace(*items_);
    index_->scan(key_of(key), 4, [&](Key k, Value v) {
      if (as_string(k) != key && as_string(k) != kMetaKey)
        next.emplace_back(std::string(as_string(k)), v);
      return true;
    });
  }
  const std::int64_t t = now();
  for (auto& [k, off] : next) {
    const Victim r = evict_one(k, off, t);
    if (r == Victim::skipped) continue;
    if (r == Victim::stuck) return 0;
    if (concurrent_) drain_retired();
    return 1;
  }
  return 0;
}

Store::Victim Store::evict_one(const std::string& k, std::uint64_t off, std::int64_t t) {
  std::unique_lock<StripeLock> l;
  if (concurrent_) {
    // The victim's stripe, never the caller's own (it reads its key's item unpinned);
    // a busy stripe is a writer at work on that key: skip it.
    StripeLock& m = stripe_of(k);
    if (&m == tls_held_stripe) return Victim::skipped;
    l = std::unique_lock(m, std::try_to_lock);
    if (!l.owns_lock()) return Victim::skipped;
  }
  const auto v = index_->lookup(key_of(k));
  if (!v || *v != off) return Victim::skipped;  // replaced or removed since the scan
  const bool dead = !live(item_at(off), t);
  if (!unlink(k, off)) return Victim::stuck;  // no space to remove (and no ballast left)
  if (dead) ++counters_.reclaimed; else ++counters_.evictions;
  return Victim::evicted;
}

void Store::scan_items(FunctionRef<void(std::string_view, std::uint64_t)> fn) {
  // In batches, each pinned on the concurrent path (the scan reads index nodes that may be
  // retired meanwhile); no item block is read.
  constexpr std::size_t kBatch = 1024;
  std::string from, last;
  for (;;) {
    std::size_t seen = 0;
    {
      std::optional<kit::EpochReclaimer::Pin> pin;
      if (concurrent_) pin.emplace(*items_);
      index_->scan(key_of(from), kBatch + 1, [&](Key k, Value v) {
        const std::string_view ks = as_string(k);
        if (seen == 0 && !from.empty() && ks == from) return true;  // where the last batch ended
        ++seen;
        last.assign(ks);
        if (ks != kMetaKey) fn(ks, v);
        return seen < kBatch;
      });
    }
    if (seen < kBatch) return;
    from = last;
  }
}

//! What evict_chunk knows of each chunk: the first chunk of its unit (a chunk, or a large
//! block / free span with its interior chunks), the evictions freeing the unit costs
//! (kNoUnit: not ours to free), and the allocator's use of it.
struct Store::ChunkCosts {
  static constexpr std::uint64_t kNoUnit = UINT64_MAX;
  std::vector<std::uint64_t> head, cost;
  std::vector<pm::Allocator::ChunkUse> use;
};

Store::ChunkCosts Store::chunk_costs(std::size_t want, std::uint64_t span,
                                     const std::vector<std::uint64_t>* tried) {
  const pm::PoolHeader& ph = pool_->header();
  const std::uint64_t cs = ph.chunk_size, first = ph.first_chunk_offset, count = ph.chunk_count;
  pm::Allocator& a = pool_->allocator();
  // A chunk of the wanted class is no use (the chunk would go back to the same class: the
  // class's own victims are evict_some's), nor is one this caller evacuated already and
  // that did not come free (an item in it is being built or replaced, or sits on the
  // caller's own stripe).
  const std::uint32_t want_block =
      want == 0 || want > classes_->max_small() ? 0
                                                : classes_->size(classes_->apart_class_of(want));
  // A unit can be freed by evicting items if it is free, an apart chunk (items only), or a
  // large block that is an item (the ballast's and the index's large blocks are not, and
  // are left out: no item the index names lies in them); its cost is the blocks live in it
  // (its items, and any being built or waiting for the epochs). For a window of several
  // chunks, the large blocks that are items (a scan of the index: offsets only).
  std::vector<bool> large_items(count, false);
  if (span > 1) {
    scan_items([&](std::string_view, std::uint64_t off) {
      if (off >= first && (off - first) / cs < count) large_items[(off - first) / cs] = true;
    });
  }
  ChunkCosts m{std::vector<std::uint64_t>(count), std::vector<std::uint64_t>(count),
               std::vector<pm::Allocator::ChunkUse>(count)};
  for (std::uint64_t c = 0; c < count;) {
    std::uint64_t n = 1;
    std::uint32_t live = 0;
    const pm::Allocator::ChunkUse u = a.chunk_use(c, &n, &live);
    n = std::max<std::uint64_t>(1, std::min(n, count - c));
    std::uint64_t k = ChunkCosts::kNoUnit;
    const bool was_tried = tried && std::find(tried->begin(), tried->end(), c) != tried->end();
    switch (u) {
      case pm::Allocator::ChunkUse::free:
        if (!was_tried) k = 0;  // (free since this caller looked: worth another attempt)
        break;
      case pm::Allocator::ChunkUse::apart:
      case pm::Allocator::ChunkUse::evacuating:
        if (a.block_size(first + c * cs) != want_block && !was_tried) k = live;
        break;
      case pm::Allocator::ChunkUse::large: k = large_items[c] ? 1 : ChunkCosts::kNoUnit; break;
      default: break;  // index nodes, the meta block, the ballast: not ours to free
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      m.head[c + i] = c;
      m.cost[c + i] = k;
      m.use[c + i] = u;
    }
    c += n;
  }
  return m;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Store::cheapest_windows(
    const ChunkCosts& m, std::uint64_t span, std::size_t windows) {
  // The windows of `span` chunks whose units cost the fewest evictions (ties: the lowest).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> picks;  // cost, first chunk
  const std::uint64_t count = m.cost.size();
  for (std::uint64_t c = 0; c + span <= count; ++c) {
    std::uint64_t total = 0;
    for (std::uint64_t i = c; i < c + span && total != ChunkCosts::kNoUnit; ++i) {
      if (m.cost[i] == ChunkCosts::kNoUnit) total = ChunkCosts::kNoUnit;
      else if (i == c || m.head[i] != m.head[i - 1]) total += m.cost[i];
    }
    if (total != ChunkCosts::kNoUnit) picks.emplace_back(total, c);
  }
  std::stable_sort(picks.begin(), picks.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  if (picks.size() > windows) picks.resize(windows);  // (span 1 when windows > 1: disjoint)
  return picks;
}

std::size_t Store::evict_chunk(std::size_t want, std::vector<std::uint64_t>* tried) {
  const pm::PoolHeader& ph = pool_->header();
  const std::uint64_t cs = ph.chunk_size, first = ph.first_chunk_offset, count = ph.chunk_count;
  const std::uint64_t span = want > classes_->max_small() ? (want + cs - 1) / cs : 1;
  if (span > count) return 0;
  const ChunkCosts m = chunk_costs(want, span, tried);
  // For the index (want_bytes 0) the `windows` cheapest chunks at once: the scan that finds
  // their items costs as much as for one, and an index whose inserts keep needing nodes
  // (roart allocates a leaf per key) would otherwise scan the index every few inserts.
  const std::size_t windows = want == 0 ? std::max<std::uint64_t>(1, count / 64) : 1;
  const auto picks = cheapest_windows(m, span, windows);
  if (picks.empty()) return 0;
  // Evacuate the windows' apart chunks (nothing more is allocated from them; each becomes
  // a free chunk when its last block is freed), then evict every item the index names in
  // the windows' units.
  std::vector<bool> victim_unit(count, false);
  std::uint64_t best_cost = 0;
  for (const auto& [k, best] : picks) {
    best_cost += k;
    for (std::uint64_t i = best; i < best + span; ++i) {
      victim_unit[m.head[i]] = true;
      if (tried) tried->push_back(i);
      if (m.use[i] == pm::Allocator::ChunkUse::apart)
        (void)pool_->allocator().evacuate(first + i * cs);
    }
  }
  std::vector<std::pair<std::string, std::uint64_t>> victims;
  if (best_cost != 0) {
    scan_items([&](std::string_view k, std::uint64_t off) {
      if (off >= first && (off - first) / cs < count && victim_unit[(off - first) / cs])
        victims.emplace_back(std::string(k), off);
    });
  }
  const std::int64_t t = now();
  std::size_t evicted = 0;
  for (auto& [k, off] : victims) {
    const Victim r = evict_one(k, off, t);
    if (r == Victim::stuck) break;
    evicted += r == Victim::evicted;
  }
  if (concurrent_ && evicted != 0) drain_retired();  // the chunk comes free with the frees
  // (Each call of one caller picks windows it did not pick before, so its loop ends.)
  return evicted + 1;
}

void Store::release_block(std::uint64_t off) noexcept {
  note_block(off, -1);  // out of the budget once the index no longer names it
  // Global-lock path: the exclusive lock is held, no reader is copying the block: freed at
  // once. Concurrent path: a reader pinned before this may still be copying it.
  store::free_unlinked(pool_->allocator(), concurrent_ && !broken_free_ ? items_.get() : nullptr,
                       off);
}

void Store::drain_retired() {
  if (items_->pending() == 0) return;
  // Every reader pinned before this has unpinned; then every thread's list (reclaim() frees
  // only this one's while others are pinned).
  items_->reclaim_everything();
}

void Store::set_exptime(std::uint64_t off, std::int64_t t) noexcept {
  std::int64_t* w = &pool_->at<ItemHeader>(off)->exptime;
  if (!concurrent_) {
    commit_word(w, t);  // readers wait on the exclusive lock until it is durable
    return;
  }
  // Lock-free readers copy this item meanwhile: a non-temporal commit, so none reads the
  // new exptime before it is durable (the dirty-read rule). The same one store + fence.
  std::uint64_t bits = 0;
  std::memcpy(&bits, &t, sizeof bits);
  pm::commit_nt(reinterpret_cast<std::uint64_t*>(w), bits);
}

std::size_t Store::evict_some(std::size_t want, bool any_class, std::size_t victims) {
  return concurrent_ ? evict_concurrent(want, any_class, victims)
                     : evict(want, any_class, victims);
}

std::size_t Store::evict_concurrent(std::size_t want, bool any_class, std::size_t victims) {
  const std::uint32_t want_block =
      want == 0 ? 0
                : (want <= classes_->max_small() ? classes_->size(classes_->apart_class_of(want)) : 0);
  // Two rounds of the CLOCK at most; looking for one size class, at most kEvictScanMax
  // keys (the hand moves on: the next call goes on from there).
  std::size_t limit = 2 * counters_.curr_items.load() + 2 * kEvictBatch;
  if (!any_class && want != 0) limit = std::min(limit, kEvictScanMax);
  const std::int64_t t = now();
  std::size_t visited = 0, evicted = 0;
  std::vector<std::pair<std::string, std::uint64_t>> batch, cands;
  while (visited < limit && evicted < victims) {
    batch.clear();
    cands.clear();
    {
      // Pinned: the items read here may be replaced and retired meanwhile.
      kit::EpochReclaimer::Pin pin(*items_);
      index_->scan(key_of(clock_hand_), kEvictBatch + 1, [&](Key k, Value v) {
        if (!batch.empty() || as_string(k) != clock_hand_)
          batch.emplace_back(std::string(as_string(k)), v);
        return batch.size() < kEvictBatch;
      });
      for (auto& [k, off] : batch) {
        ++visited;
        clock_hand_ = k;
        if (k == kMetaKey) continue;
        const bool dead = !live(item_at(off), t);
        if (!dead && test_clear_ref(off)) continue;  // second chance
        const std::size_t bs = pool_->allocator().block_size(off);
        const bool fits = any_class || dead || want == 0 ||
                          (want_block != 0 ? bs == want_block : bs >= want);
        if (!fits) continue;
        cands.emplace_back(k, off);
        if (evicted + cands.size() == victims) break;
      }
    }
    if (batch.empty()) {
      if (clock_hand_.empty()) break;  // nothing in the cache at all
      clock_hand_.clear();             // wrap around
      continue;
    }
    for (auto& [k, off] : cands) {
      const Victim r = evict_one(k, off, t);
      if (r == Victim::stuck) {
        limit = 0;  // the index cannot remove (no space, no ballast left): stop here
        break;
      }
      evicted += r == Victim::evicted;
    }
  }
  if (evicted != 0) drain_retired();  // the space must be free for the caller's allocation
  return evicted;
}

std::size_t Store::evict(std::size_t want, bool any_class, std::size_t victims) {
  const std::uint32_t want_block =
      want == 0 ? 0
                : (want <= classes_->max_small() ? classes_->size(classes_->apart_class_of(want)) : 0);
  // Two rounds of the CLOCK at most; looking for one size class, at most kEvictScanMax
  // keys (the hand moves on: the next call goes on from there).
  std::size_t limit = 2 * counters_.curr_items.load() + 2 * kEvictBatch;
  if (!any_class && want != 0) limit = std::min(limit, kEvictScanMax);
  const std::int64_t t = now();
  std::size_t visited = 0, evicted = 0;
  std::vector<std::pair<std::string, std::uint64_t>> batch;
  while (visited < limit && evicted < victims) {
    batch.clear();
    index_->scan(key_of(clock_hand_), kEvictBatch + 1, [&](Key k, Value v) {
      if (!batch.empty() || as_string(k) != clock_hand_)
        batch.emplace_back(std::string(as_string(k)), v);
      return batch.size() < kEvictBatch;
    });
    if (batch.empty()) {
      if (clock_hand_.empty()) break;  // nothing in the cache at all
      clock_hand_.clear();             // wrap around
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
      if (!unlink(k, off)) {
        limit = 0;  // the index cannot remove (no space, no ballast left): stop here
        break;
      }
      if (dead) ++counters_.reclaimed; else ++counters_.evictions;
      if (++evicted == victims) break;
    }
  }
  return evicted;
}

StoreResult Store::store_condition(StoreMode mode, const ItemHeader* live_item,
                                   std::uint64_t cas_in, bool stale_ok, bool* mark_stale) {
  const bool hit = live_item != nullptr;
  const bool concat = mode == StoreMode::append || mode == StoreMode::prepend;
  if (mode == StoreMode::cas) {
    if (!hit) return StoreResult::not_found;
    if (live_item->cas == cas_in) return StoreResult::stored;
    if (stale_ok && cas_in < live_item->cas) {  // memcached's set-to-invalid
      *mark_stale = true;
      return StoreResult::stored;
    }
    return StoreResult::exists;
  }
  if (concat && cas_in != 0) {
    if (!hit) return StoreResult::not_stored;  // memcached: NS (an append of nothing)
    if (live_item->cas != cas_in) return StoreResult::exists;
  }
  if (mode == StoreMode::add && hit) return StoreResult::not_stored;
  if ((mode == StoreMode::replace || concat) && !hit) return StoreResult::not_stored;
  return StoreResult::stored;
}

StoreResult Store::make_concat(StoreMode mode, std::string_view key, const ItemHeader* o,
                               std::uint64_t cas, std::string_view value, std::uint64_t* off) {
  const std::string_view ov(item_value(o), o->value_len);
  const std::uint16_t fl = o->iflags & kItemKeyBinary;
  return mode == StoreMode::append
             ? make_item(key, o->flags, o->exptime, cas, ov, value, off, true, fl)
             : make_item(key, o->flags, o->exptime, cas, value, ov, off, true, fl);
}

StoreResult Store::store(StoreMode mode, std::string_view key, std::uint32_t flags,
                         std::int64_t exptime, std::string_view value, std::uint64_t cas_in,
                         std::uint64_t* cas_out, bool stale_ok, std::uint16_t key_iflags) {
  if (key == kMetaKey) return StoreResult::not_stored;
  maybe_apply_flush();
  // Concurrent path: the key's stripe from before the build (audit() takes every stripe, so
  // no built-but-unpublished item is in flight then). Global-lock path: the build runs
  // before the exclusive lock, under build_gate_ (audit() takes it).
  std::optional<WriteLock> g;
  std::shared_lock<std::shared_mutex> building;
  if (concurrent_) g.emplace(*this, key);
  else building = std::shared_lock(build_gate_);
  const bool concat = mode == StoreMode::append || mode == StoreMode::prepend;
  std::uint64_t off = 0;
  std::uint64_t cas = 0;
  if (!concat) {  // build and flush the new item before the commit's lock
    cas = take_cas();
    const StoreResult r = make_item(key, flags, exptime, cas, value, {}, &off, false, key_iflags);
    if (r != StoreResult::stored) {
      if (mode == StoreMode::set) {  // memcached drops the old value of a failed set
        if (!g) g.emplace(*this, key);
        if (const auto v = index_->lookup(key_of(key))) unlink(key, *v);
      }
      return r;
    }
  }
  if (!g) g.emplace(*this, key);
  std::uint64_t old = 0;
  if (const auto v = index_->lookup(key_of(key))) old = *v;
  // (A set stores whatever the old item holds: it reads nothing of it, nor checks it.)
  const ItemHeader* o = old && mode != StoreMode::set ? checked_item(key, old) : nullptr;
  const bool hit = o && live(o, now());
  bool mark_stale = false;
  const StoreResult fail = store_condition(mode, hit ? o : nullptr, cas_in, stale_ok, &mark_stale);
  if (fail != StoreResult::stored) {
    if (off) free_unpublished(off);
    if (mode == StoreMode::add && hit) mark_ref(old);
    return fail;
  }
  bool keep_token = false;
  if (mark_stale) {
    // The new value replaces the old one but keeps its TTL, is stale, and keeps a sent
    // token. The item is not yet published: rewrite its header fields before the commit.
    auto* h = pool_->at<ItemHeader>(off);
    pm::store(&h->exptime, o->exptime);
    pm::store(&h->iflags, static_cast<std::uint8_t>(h->iflags | kItemStale));
    pm::store(&h->crc, store::stored_crc(h));  // the checksum covers iflags
    pm::flush(h, sizeof *h);
    keep_token = token_sent(old);
  }
  if (concat) {
    cas = take_cas();
    if (const StoreResult r = make_concat(mode, key, o, cas, value, &off); r != StoreResult::stored)
      return r;
    // Eviction inside make_item may have removed the old item.
    old = 0;
    if (const auto v = index_->lookup(key_of(key))) old = *v;
  }
  const StoreResult r = commit(key, off, old);
  if (r == StoreResult::stored) {
    if (keep_token) set_token(off);
    if (cas_out) *cas_out = cas;
  }
  return r;
}

StoreResult Store::remove(std::string_view key, std::uint64_t cas_in) {
  if (key == kMetaKey) return StoreResult::not_found;
  maybe_apply_flush();
  WriteLock g(*this, key);
  const auto v = index_->lookup(key_of(key));
  if (!v) return StoreResult::not_found;
  const ItemHeader* h = checked_item(key, *v);
  if (!h) return StoreResult::not_found;  // damaged: a miss
  if (!live(h, now())) {
    if (unlink(key, *v)) ++counters_.reclaimed;  // lazily reclaim the expired item
    return StoreResult::not_found;
  }
  if (cas_in != 0 && h->cas != cas_in) return StoreResult::exists;
  return unlink(key, *v) ? StoreResult::stored : StoreResult::no_memory;
}

StoreResult Store::rewrite(std::string_view key, std::uint64_t off, std::uint16_t iflags,
                           std::int64_t exptime) {
  const ItemHeader* o = item_at(off);
  const std::string_view ov(item_value(o), o->value_len);
  std::uint64_t noff = 0;
  const StoreResult r = make_item(key, o->flags, exptime, take_cas(), ov, {}, &noff, true, iflags);
  if (r != StoreResult::stored) return r;
  std::uint64_t old = 0;
  if (const auto v = index_->lookup(key_of(key))) old = *v;  // eviction may have taken it
  return commit(key, noff, old);
}

StoreResult Store::meta_delete(std::string_view key, bool has_cas, std::uint64_t cas_in,
                               bool invalidate, const std::int64_t* ttl) {
  if (key == kMetaKey) return StoreResult::not_found;
  maybe_apply_flush();
  WriteLock g(*this, key);
  std::uint64_t off = 0;
  const ItemHeader* h = find_live(key, &off);
  if (!h) return StoreResult::not_found;
  if (has_cas && h->cas != cas_in) return StoreResult::exists;
  if (!invalidate) return unlink(key, off) ? StoreResult::stored : StoreResult::no_memory;
  // Stale copy: new cas, TTL if given, the token cleared (a new block starts without one).
  return rewrite(key, off, static_cast<std::uint16_t>(h->iflags | kItemStale),
                 ttl ? *ttl : h->exptime);
}

bool Store::meta_get(std::string_view key, const MetaGetOptions& o, MetaItemFn fn) {
  if (key == kMetaKey) return false;
  maybe_apply_flush();
  const bool changes = o.ttl || o.vivify || o.may_win;
  std::uint64_t off = 0;
  if (!changes) {
    ReadLock g(*this);
    const ItemHeader* h = find_live(key, &off);
    if (!h) return false;
    // A stale item without a sent token hands one out: that needs the write lock.
    if (!(h->iflags & kItemStale) || token_sent(off)) {
      ItemView iv = view_of(off);
      if (o.block_info) add_block_info(off, &iv);
      note_access(off, !o.no_update, &iv);
      if (fn(iv)) set_token(off);  // not reached: the callback claims only on a stale item
      return true;
    }
  }
  WriteLock g(*this, key);
  const ItemHeader* h = find_live(key, &off);
  bool created = false;
  if (!h) {
    if (!o.vivify) return false;
    std::int64_t e = *o.vivify;
    if (o.ttl && o.ttl_after_vivify) e = *o.ttl;
    if (make_item(key, 0, e, take_cas(), {}, {}, &off, true, o.key_iflags) != StoreResult::stored)
      return false;
    std::uint64_t old = 0;
    if (const auto v = index_->lookup(key_of(key))) old = *v;  // expired, or taken by eviction
    if (commit(key, off, old) != StoreResult::stored) return false;
    created = true;
  }
  ItemView iv = view_of(off);
  if (o.block_info) add_block_info(off, &iv);
  iv.created = created;
  if (created) {
    iv.exptime = 0;  // memcached creates with no TTL, then applies N (and T) in flag order
  } else if (o.ttl) {
    set_exptime(off, *o.ttl);  // iv keeps the old one
  }
  // A created item reports h0, and counts as fetched from then on (memcached: the next mg
  // says h1).
  note_access(off, !o.no_update, &iv);
  if (fn(iv)) set_token(off);
  return true;
}

DeltaResult Store::delta(std::string_view key, bool incr, std::uint64_t d, DeltaOut* out,
                         const DeltaOptions& opt) {
  if (key == kMetaKey) return DeltaResult::not_found;
  maybe_apply_flush();
  WriteLock g(*this, key);
  std::uint64_t old = 0;
  const ItemHeader* o = nullptr;
  if (const auto v = index_->lookup(key_of(key))) {
    old = *v;
    o = checked_item(key, old);
    if (o && !live(o, now())) o = nullptr;
  }
  std::uint64_t x = 0;
  std::string text;
  std::uint32_t flags = 0;
  std::uint16_t iflags = opt.key_iflags;
  std::int64_t exptime = 0;
  out->created = !o;
  if (!o) {
    if (!opt.create) return DeltaResult::not_found;
    x = opt.initial;
    text = std::to_string(x);
    exptime = opt.ttl && opt.ttl_after_create ? *opt.ttl : opt.create_exptime;
    out->old_exptime = 0;
  } else {
    // memcached's do_add_delta order: an empty value, then the cas, then the number.
    if (o->value_len == 0) return DeltaResult::non_numeric;
    if (opt.cas_in != 0 && o->cas != opt.cas_in) return DeltaResult::exists;
    if (!parse_u64_value(std::string_view(item_value(o), o->value_len), &x))
      return DeltaResult::non_numeric;
    x = incr ? x + d : (d > x ? 0 : x - d);
    text = std::to_string(x);
    // memcached rewrites a shorter number in place, padded with spaces to the old length.
    if (text.size() < o->value_len) text.append(o->value_len - text.size(), ' ');
    flags = o->flags;
    iflags = o->iflags;
    out->old_exptime = o->exptime;
    exptime = opt.ttl ? *opt.ttl : o->exptime;
  }
  const std::uint64_t cas = take_cas();
  std::uint64_t off = 0;
  if (make_item(key, flags, exptime, cas, text, {}, &off, true, iflags) != StoreResult::stored)
    return DeltaResult::no_memory;
  old = 0;
  if (const auto v = index_->lookup(key_of(key))) old = *v;
  if (commit(key, off, old) != StoreResult::stored) return DeltaResult::no_memory;
  out->value = x;
  out->cas = cas;
  out->exptime = exptime;
  return DeltaResult::ok;
}

std::size_t Store::sweep(std::size_t budget) {
  maybe_apply_flush();
  if (concurrent_) return sweep_concurrent(budget);
  std::vector<std::pair<std::string, std::uint64_t>> dead;
  {
    std::shared_lock g(lock_);
    dead = expired_from_hand(budget);
  }
  std::size_t n = 0;
  std::unique_lock g(lock_);
  const std::int64_t t = now();
  for (auto& [k, off] : dead) {
    const auto v = index_->lookup(key_of(k));
    if (!v || *v != off || live(item_at(off), t)) continue;
    if (!unlink(k, off)) break;  // no space to remove (and no ballast left): later
    ++counters_.reclaimed;
    ++n;
  }
  return n;
}

// The expired items among the next `budget` keys from the sweep hand, which moves past them
// (back to the start after the last key). The caller keeps the items readable: the shared
// side of the lock, or a pin of the items' epoch.
std::vector<std::pair<std::string, std::uint64_t>> Store::expired_from_hand(std::size_t budget) {
  std::vector<std::pair<std::string, std::uint64_t>> dead;
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
  return dead;
}

std::size_t Store::sweep_concurrent(std::size_t budget) {
  std::lock_guard sg(sweep_lock_);
  std::vector<std::pair<std::string, std::uint64_t>> dead;
  {
    kit::EpochReclaimer::Pin pin(*items_);  // the items read here may be retired meanwhile
    dead = expired_from_hand(budget);
  }
  std::size_t n = 0;
  const std::int64_t t = now();
  for (auto& [k, off] : dead) {
    WriteLock g(*this, k);  // re-checked under the key's stripe
    const auto v = index_->lookup(key_of(k));
    if (!v || *v != off || live(item_at(off), t)) continue;
    if (!unlink(k, off)) break;  // no space to remove (and no ballast left): later
    ++counters_.reclaimed;
    ++n;
  }
  return n;
}

pm::AuditReport Store::audit() {
  // What kit::walk_all does for a concrete index: its blocks, then each value's block.
  auto run = [&] {
    return pool_->allocator().audit([&](pm::BlockVisitor v) -> Result<void> {
      if (auto r = index_->visit_blocks(v); !r) return r;
      index_->scan(Key{}, SIZE_MAX, [&](Key, Value off) {
        v(off);
        return true;
      });
      std::lock_guard g(ballast_lock_);
      for (std::uint64_t b : ballast_)
        if (b != 0) v(b);
      // Items unlinked and retired, not yet freed: drain_retired() below frees only what no
      // pinned reader can hold, and a get that pins between its grace period and its
      // reclaim keeps the newest ones waiting. Still the store's, no leak.
      if (concurrent_) items_->for_each_retired([&](std::uint64_t off) { v(off); });
      return {};
    });
  };
  if (!concurrent_) {
    std::unique_lock gate(build_gate_);
    std::unique_lock g(lock_);
    return run();
  }
  AllStripes all(*this);  // no write in flight: nothing built and unpublished
  drain_retired();        // most retired items freed (the rest are visited above)
  // The index's own retired nodes, waiting for readers pinned before their retire (readers
  // run on meanwhile), are reported by its visit_blocks: still the index's, no leak.
  return run();
}

Result<void> Store::verify() {
  std::optional<AllStripes> all;
  std::unique_lock<std::shared_mutex> g;
  if (concurrent_) all.emplace(*this);
  else g = std::unique_lock(lock_);
  if (auto r = index_->verify(); !r) return r;
  return rebuild();
}

void Store::for_each_item_size(FunctionRef<void(std::uint32_t, std::uint32_t)> fn) {
  ReadLock g(*this);
  index_->scan(Key{}, SIZE_MAX, [&](Key k, Value off) {
    if (as_string(k) == kMetaKey) return true;
    const ItemHeader* h = item_at(off);
    fn(static_cast<std::uint32_t>(item_bytes(h->key_len, h->value_len)),
       pool_->allocator().block_size(off));
    return true;
  });
}

}  // namespace wort::server
