// store/store.cc — wort::Store: values of any size over one persistent index (store.h,
// layout.h; docs/DESIGN.md "The store").
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "pm/persist.h"
#include "store/block_pool.h"
#include "store/crc32c.h"
#include "store/store_impl.h"
#include "store/value_block.h"

namespace wort {
using namespace store;  // layout.h and crc32c.h
namespace {

constexpr std::size_t kCursorBatch = 64;  // keys a cursor copies per index scan

std::string_view key_view(Key k) noexcept { return as_string(k); }

}  // namespace

// --- WriteBatch -----------------------------------------------------------------------------

void WriteBatch::put(std::string_view key, std::string_view value) {
  ops_.push_back(Op{false, std::string(key), std::string(value)});
}

void WriteBatch::remove(std::string_view key) { ops_.push_back(Op{true, std::string(key), {}}); }

std::string store::log_image(const WriteBatch& batch) {
  std::size_t bytes = sizeof(LogHeader);
  for (const auto& op : batch.ops()) bytes += record_bytes(op.key.size(), op.value.size());
  std::string img(bytes, '\0');
  LogHeader h{};
  h.magic = kLogMagic;
  h.count = batch.count();
  h.bytes = bytes;
  std::size_t at = sizeof h;
  for (const auto& op : batch.ops()) {
    LogRecord r{};
    r.op = op.remove ? 1 : 0;
    r.key_len = static_cast<std::uint32_t>(op.key.size());
    r.value_len = static_cast<std::uint32_t>(op.value.size());
    std::memcpy(img.data() + at, &r, sizeof r);
    if (!op.key.empty()) std::memcpy(img.data() + at + sizeof r, op.key.data(), op.key.size());
    if (!op.value.empty())
      std::memcpy(img.data() + at + sizeof r + op.key.size(), op.value.data(), op.value.size());
    at += record_bytes(op.key.size(), op.value.size());
  }
  std::memcpy(img.data(), &h, sizeof h);
  h.crc = store::crc32c(0, img.data() + 8, bytes - 8);
  std::memcpy(img.data(), &h, sizeof h);
  return img;
}

// --- Impl -------------------------------------------------------------------------------------

Store::Impl::~Impl() {
  retired.reset();  // frees what waits (nobody reads any more)
  index.reset();
  pool.reset();
}

std::mutex& Store::Impl::stripe(std::string_view key) noexcept {
  return stripes[std::hash<std::string_view>{}(key) % kStripes];
}

Status Store::Impl::make_blob(std::string_view key, std::string_view value,
                              std::uint64_t* off) noexcept {
  if (Status s = pool->allocator().allocate(blob_bytes(key.size(), value.size()), off);
      s != Status::ok)
    return s;
  BlobHeader h{};
  h.magic = kBlobMagic;
  h.key_len = static_cast<std::uint32_t>(key.size());
  h.value_len = static_cast<std::uint32_t>(value.size());
  write_block(pool->at<char>(*off), h, key, value, {},
              broken == StoreBroken::blob_not_written_back ? WriteBack::omit_for_crash_test
                                                           : WriteBack::flush);
  return Status::ok;
}

Result<std::string_view> Store::Impl::read_blob(std::uint64_t off, std::string_view key) const {
  const BlobHeader* h = nullptr;
  const BlockCheck c = check_block(*pool, off, key, kMaxValueSize, &h);
  if (c != BlockCheck::ok)
    return Error{Status::corrupt, "value of a " + std::to_string(key.size()) +
                                      "-byte key at pool offset " + std::to_string(off) + ": " +
                                      to_string(c)};
  return block_value(h);
}

Status Store::Impl::upsert_key(std::string_view ikey, Value v) {
  return index->upsert(as_key(ikey), v);
}

Status Store::Impl::remove_key(std::string_view ikey) { return index->remove(as_key(ikey)); }

void Store::Impl::release(std::optional<Value> blob) {
  if (!blob) return;
  free_unlinked(pool->allocator(), retired.get(), *blob);
}

void Store::Impl::free_block(std::uint64_t off) noexcept { pool->allocator().free(off); }

Status Store::Impl::put_locked(std::string_view ikey, std::uint64_t blob) {
  const std::optional<Value> old = index->lookup(as_key(ikey));
  if (Status s = upsert_key(ikey, blob); s != Status::ok) return s;
  release(old);  // unlinked durably: the upsert's commit returned
  if (!old) count.fetch_add(1, std::memory_order_relaxed);
  return Status::ok;
}

Result<bool> Store::Impl::remove_locked(std::string_view ikey) {
  const std::optional<Value> old = index->lookup(as_key(ikey));
  if (!old) return false;
  const Status s = remove_key(ikey);
  if (s == Status::not_found) return false;
  if (s != Status::ok) return Error{s, "remove failed: " + std::string(to_string(s))};
  release(old);  // unlinked durably: the remove's commit returned
  count.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

Result<std::vector<Store::Impl::LogOp>> Store::Impl::parse_log(std::uint64_t off) const {
  auto bad = [&](const std::string& what) {
    return Error{Status::corrupt, "the committed batch log at pool offset " +
                                      std::to_string(off) + " is damaged: " + what};
  };
  if (off % 16 != 0 || !pool->contains(off, sizeof(LogHeader))) return bad("not a block");
  LogHeader h;
  std::memcpy(&h, pool->at<LogHeader>(off), sizeof h);
  if (h.magic != kLogMagic) return bad("bad magic");
  if (h.bytes < sizeof h || !pool->contains(off, h.bytes)) return bad("bad length");
  const char* base = pool->at<char>(off);
  if (store::crc32c(0, base + 8, h.bytes - 8) != h.crc) return bad("checksum mismatch");
  // Every record is checked before any is applied.
  std::vector<LogOp> ops;
  std::size_t at = sizeof h;
  for (std::uint64_t i = 0; i < h.count; ++i) {
    if (h.bytes - at < sizeof(LogRecord)) return bad("record past the end");
    LogRecord r;
    std::memcpy(&r, base + at, sizeof r);
    if (r.op > 1 || r.key_len > max_key || r.value_len > kMaxValueSize ||
        h.bytes - at - sizeof r < pad8(std::size_t{r.key_len} + r.value_len))
      return bad("bad record");
    const char* p = base + at + sizeof r;
    ops.push_back(LogOp{r.op == 1, {p, r.key_len}, {p + r.key_len, r.value_len}});
    at += record_bytes(r.key_len, r.value_len);
  }
  return ops;
}

void Store::Impl::replay_record(const LogOp& op, Status* s) {
  const std::string ikey = data_key(op.key);
  if (op.remove) {
    auto r = remove_locked(ikey);
    *s = r ? Status::ok : r.status();
    return;
  }
  std::uint64_t blob = 0;
  if ((*s = make_blob(op.key, op.value, &blob)) != Status::ok) return;
  if ((*s = put_locked(ikey, blob)) != Status::ok) free_block(blob);  // never published
}

Result<void> Store::Impl::replay_log() {
  const std::optional<Value> off = index->lookup(as_key(kLogKey));
  if (!off) return {};
  auto ops = parse_log(*off);
  if (!ops) return ops.error();
  Status s = Status::ok;
  for (const LogOp& op : *ops) {
    replay_record(op, &s);
    if (s != Status::ok)
      return Error{s, "replaying a committed batch: " + std::string(to_string(s))};
  }
  if (Status r = clear_log(*off); r != Status::ok)
    return Error{r, "clearing the replayed batch log: " + std::string(to_string(r))};
  replayed = true;
  return {};
}

Result<void> Store::Impl::visit_blocks(pm::BlockVisitor v) const {
  if (auto r = index->visit_blocks(v); !r) return r;
  index->scan(Key{}, SIZE_MAX, [&](Key, Value off) {
    v(off);
    return true;
  });
  retired->for_each_retired([&](std::uint64_t off) { v(off); });
  return {};
}

pm::AuditReport Store::Impl::audit() const {
  return pool->allocator().audit([&](pm::BlockVisitor v) { return visit_blocks(v); });
}

Result<std::unique_ptr<Store>> Store::Impl::attach(std::unique_ptr<Pool> p, bool fresh,
                                                   const std::string& name) {
  auto impl = std::make_unique<Impl>();
  impl->pool = std::move(p);
  Pool& pool = *impl->pool;
  const std::string kind(pool.kind());
  if (kind == "art")
    return Error{Status::invalid_argument, "index kind 'art' is volatile (DRAM only)"};
  if (!pool.values_are_blocks())
    return Error{Status::not_a_pool, "pool '" + name + "' holds a bare '" + kind +
                                         "' index, not a wort::Store (its values are not blocks)"};
  // A first open killed before it was done is finished (store/block_pool.h).
  bool init = fresh;
  auto ix = open_block_index(pool, kMetaKey, &init);
  if (!ix) return ix.error();
  impl->index = std::move(ix).value();
  Index& index = *impl->index;
  std::optional<Value> meta = init ? std::nullopt : index.lookup(as_key(kMetaKey));
  if (!init && !meta)
    return Error{Status::not_a_pool, "pool '" + name +
                                         "' is not a wort::Store pool (no store meta block; a "
                                         "`wort serve` pool?)"};
  if (init) {
    std::uint64_t off = 0;
    if (pool.allocator().allocate(sizeof(MetaBlock), &off) != Status::ok)
      return Error{Status::out_of_space, "pool '" + name + "' too small for the store's meta block"};
    MetaBlock m{};
    m.magic = kMetaMagic;
    m.version = kStoreVersion;
    pm::copy(pool.at<MetaBlock>(off), &m, sizeof m);
    pm::flush(pool.at<MetaBlock>(off), sizeof m);  // ordered by the insert's fence
    if (Status s = index.insert(as_key(kMetaKey), off); s != Status::ok)
      return Error{s, "cannot insert the store's meta block: " + std::string(to_string(s))};
  } else {
    const std::uint64_t off = *meta;
    if (off % 16 != 0 || !pool.contains(off, sizeof(MetaBlock)) ||
        pool.at<MetaBlock>(off)->magic != kMetaMagic)
      return Error{Status::corrupt, "pool '" + name + "': the store's meta block at offset " +
                                        std::to_string(off) + " is damaged"};
    if (pool.at<MetaBlock>(off)->version > kStoreVersion)
      return Error{Status::newer_version, "pool '" + name + "' holds a store of version " +
                                              std::to_string(pool.at<MetaBlock>(off)->version) +
                                              "; this build reads up to " +
                                              std::to_string(kStoreVersion)};
  }
  impl->max_key = index.max_key_size() - 1;
  impl->retired = std::make_unique<kit::EpochReclaimer>(&kit::free_to_allocator, &pool.allocator());
  impl->stripes = std::make_unique<std::mutex[]>(kStripes);
  if (auto r = impl->replay_log(); !r) return r.error();
  std::int64_t n = 0;
  const std::string first(1, kDataTag);
  index.scan(as_key(first), SIZE_MAX, [&](Key, Value) {
    ++n;
    return true;
  });
  impl->count = n;
  return std::make_unique<Store>(std::move(impl));
}

Result<std::unique_ptr<Store>> store::open_image(std::span<std::byte> image,
                                                 const std::string& name) {
  auto p = Pool::attach(image, {}, name);
  if (!p) return p.error();
  return Store::Impl::attach(std::move(p).value(), false, name);
}

// --- Store ------------------------------------------------------------------------------------

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::open(const std::string& path, const StoreOptions& o) {
  if (o.kind == "art")
    return Error{Status::invalid_argument,
                 "index kind 'art' is volatile (DRAM only); a store needs a persistent one"};
  bool fresh = false;
  auto p = Pool::open(path, o.kind);
  if (!p && p.status() == Status::no_such_file) {
    PoolOptions po;
    po.size = o.size;
    po.kind = o.kind.empty() ? "wort" : o.kind;
    const auto kinds = Index::kinds();
    if (std::find(kinds.begin(), kinds.end(), po.kind) == kinds.end())
      return Error{Status::invalid_argument, "no index kind '" + po.kind + "'"};
    po.values_are_blocks = true;
    p = Pool::create(path, po);
    fresh = true;
  }
  if (!p) return p.error();
  auto s = Impl::attach(std::move(p).value(), fresh, path);
  if (!s && fresh) std::remove(path.c_str());  // a failed first open leaves no pool behind
  return s;
}

Status Store::put(std::string_view key, std::string_view value) {
  Impl& m = *impl_;
  if (key.size() > m.max_key || value.size() > kMaxValueSize) return Status::invalid_argument;
  std::uint64_t blob = 0;
  if (Status s = m.make_blob(key, value, &blob); s != Status::ok) return s;
  const IndexKey ikey(key);
  std::shared_lock batch(m.batch_lock);
  std::lock_guard g(m.stripe(key));
  const Status s = m.put_locked(ikey.view(), blob);
  if (s != Status::ok) m.free_block(blob);  // never published
  return s;
}

Result<std::optional<std::string>> Store::get(std::string_view key) const {
  const Impl& m = *impl_;
  if (key.size() > m.max_key) return std::optional<std::string>();
  const IndexKey ikey(key);
  kit::EpochReclaimer::Pin pin(*m.retired);
  const std::optional<Value> off = m.index->lookup(ikey.key());
  if (!off) return std::optional<std::string>();
  auto v = m.read_blob(*off, key);
  if (!v) return v.error();
  return std::optional<std::string>(std::string(*v));
}

Status Store::read(std::string_view key, FunctionRef<void(std::string_view)> fn) const {
  const Impl& m = *impl_;
  if (key.size() > m.max_key) return Status::not_found;
  const IndexKey ikey(key);
  kit::EpochReclaimer::Pin pin(*m.retired);
  const std::optional<Value> off = m.index->lookup(ikey.key());
  if (!off) return Status::not_found;
  auto v = m.read_blob(*off, key);
  if (!v) return Status::corrupt;
  fn(*v);
  return Status::ok;
}

Result<bool> Store::remove(std::string_view key) {
  Impl& m = *impl_;
  if (key.size() > m.max_key) return false;
  const IndexKey ikey(key);
  std::shared_lock batch(m.batch_lock);
  std::lock_guard g(m.stripe(key));
  return m.remove_locked(ikey.view());
}

bool Store::contains(std::string_view key) const {
  const Impl& m = *impl_;
  if (key.size() > m.max_key) return false;
  return m.index->lookup(IndexKey(key).key()).has_value();
}

std::size_t Store::size() const noexcept {
  const std::int64_t n = impl_->count.load(std::memory_order_relaxed);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

Status Store::write(const WriteBatch& batch) {
  Impl& m = *impl_;
  if (batch.empty()) return Status::ok;
  for (const auto& op : batch.ops())
    if (op.key.size() > m.max_key || op.value.size() > kMaxValueSize)
      return Status::invalid_argument;
  const std::string img = log_image(batch);
  std::unique_lock excl(m.batch_lock);
  // An earlier batch whose apply failed (out of index space) left its log committed:
  // finish it first, as the next open would.
  if (m.index->lookup(as_key(kLogKey)))
    if (auto r = m.replay_log(); !r) return r.status();
  std::uint64_t log = 0;
  std::vector<std::uint64_t> blobs;
  if (Status s = m.allocate_batch(batch, img.size(), &log, &blobs); s != Status::ok) return s;
  if (Status s = m.commit_batch(log, img); s != Status::ok) {
    for (std::uint64_t b : blobs)
      if (b != 0) m.free_block(b);
    m.free_block(log);
    return s;
  }
  if (Status s = m.apply_batch(batch, blobs); s != Status::ok) return s;
  return m.clear_log(log);
}

Status Store::Impl::clear_log(std::uint64_t log) {
  if (Status s = remove_key(kLogKey); s != Status::ok) return s;
  free_block(log);  // unlinked durably; no reader reads a log
  return Status::ok;
}

Status Store::Impl::allocate_batch(const WriteBatch& batch, std::size_t log_bytes,
                                   std::uint64_t* log, std::vector<std::uint64_t>* blobs) {
  // Every block the batch needs, before its commit: out_of_space then changes nothing.
  if (Status s = pool->allocator().allocate(log_bytes, log); s != Status::ok) return s;
  blobs->assign(batch.count(), 0);
  for (std::size_t i = 0; i < batch.count(); ++i) {
    const auto& op = batch.ops()[i];
    if (op.remove) continue;
    if (Status s = make_blob(op.key, op.value, &(*blobs)[i]); s != Status::ok) {
      for (std::uint64_t b : *blobs)
        if (b != 0) free_block(b);
      free_block(*log);
      return s;
    }
  }
  return Status::ok;
}

void Store::Impl::write_log(std::uint64_t log, const std::string& img) noexcept {
  char* lp = pool->at<char>(log);
  pm::copy(lp, img.data(), img.size());
  pm::flush(lp, img.size());  // no fence: the index's commit fences first
}

void Store::Impl::insert_log(std::uint64_t log, Status* s) {
  *s = index->insert(as_key(kLogKey), log);
}

Status Store::Impl::commit_batch(std::uint64_t log, const std::string& img) {
  Status s = Status::ok;
  if (broken != StoreBroken::log_commit_before_records) {
    write_log(log, img);
    insert_log(log, &s);  // the commit: "\0log" names the written-back log
    return s;
  }
  insert_log(log, &s);
  if (s == Status::ok) {
    write_log(log, img);
    pm::fence();
  }
  return s;
}

Status Store::Impl::apply_batch(const WriteBatch& batch, const std::vector<std::uint64_t>& blobs) {
  // Single writers wait on the batch lock; readers see each key change on its own. A failure
  // here (the index out of space) leaves the log committed: the next write() or open replays
  // the whole batch. The blobs not yet published go back.
  auto unpublished = [&](std::size_t from) {
    for (std::size_t j = from; j < blobs.size(); ++j)
      if (blobs[j] != 0) free_block(blobs[j]);
  };
  for (std::size_t i = 0; i < batch.count(); ++i) {
    const auto& op = batch.ops()[i];
    const std::string ikey = data_key(op.key);
    if (op.remove) {
      if (auto r = remove_locked(ikey); !r) {
        unpublished(i + 1);
        return r.status();
      }
      continue;
    }
    if (Status s = put_locked(ikey, blobs[i]); s != Status::ok) {
      unpublished(i);
      return s;
    }
  }
  return Status::ok;
}

Cursor Store::cursor(std::optional<std::string_view> lo,
                     std::optional<std::string_view> hi) const {
  return Cursor(*this, lo ? std::optional<std::string>(std::string(*lo)) : std::nullopt,
                hi ? std::optional<std::string>(std::string(*hi)) : std::nullopt);
}

std::string_view Store::kind() const noexcept { return impl_->index->kind(); }
std::size_t Store::max_key_size() const noexcept { return impl_->max_key; }

Result<void> Store::verify() const {
  const Impl& m = *impl_;
  if (auto r = m.index->verify(); !r) return r;
  Error bad;
  kit::EpochReclaimer::Pin pin(*m.retired);
  const std::string first(1, kDataTag);
  m.index->scan(as_key(first), SIZE_MAX, [&](Key k, Value off) {
    auto v = m.read_blob(off, key_view(k).substr(1));
    if (!v) bad = v.error();
    return v.ok();
  });
  if (bad.code != Status::ok) return bad;
  return {};
}

// --- Cursor -----------------------------------------------------------------------------------

Cursor::Cursor(const Store& s, std::optional<std::string> lo, std::optional<std::string> hi)
    : store_(&s), lo_(std::move(lo)), hi_(std::move(hi)) {
  fill(lo_ ? std::string_view(*lo_) : std::string_view(), true);
}

void Cursor::fill(std::string_view from, bool inclusive) {
  // `from` may view buf_ (next() passes the batch's last key): the index key first.
  IndexKey ifrom(from, inclusive ? std::string_view() : std::string_view("\0", 1));
  buf_.clear();
  entries_.clear();
  pos_ = 0;
  if (status_ != Status::ok) return;
  const Store::Impl& m = store_->impl();
  std::size_t seen = 0;
  bool stop = false;
  kit::EpochReclaimer::Pin pin(*m.retired);
  m.index->scan(ifrom.key(), kCursorBatch, [&](Key k, Value off) {
    ++seen;
    const std::string_view ik = key_view(k);
    if (ik.empty() || ik[0] != kDataTag) return !(stop = true);
    const std::string_view uk = ik.substr(1);
    if (hi_ && uk.compare(*hi_) >= 0) return !(stop = true);
    auto v = m.read_blob(off, uk);
    if (!v) {
      status_ = Status::corrupt;
      return !(stop = true);
    }
    entries_.push_back(Entry{buf_.size(), static_cast<std::uint32_t>(uk.size()),
                             static_cast<std::uint32_t>(v->size())});
    buf_.append(uk);
    buf_.append(*v);
    return true;
  });
  exhausted_ = stop || seen < kCursorBatch;
  if (status_ != Status::ok) {
    buf_.clear();
    entries_.clear();
  }
}

void Cursor::next() {
  if (!valid()) return;
  if (++pos_ < entries_.size() || exhausted_) return;
  pos_ = entries_.size() - 1;
  fill(key(), false);
}

void Cursor::seek(std::string_view k) {
  std::string_view from = k;
  if (lo_ && from < *lo_) from = *lo_;
  exhausted_ = false;
  const std::string copy(from);  // k may view this cursor's batch
  fill(copy, true);
}

}  // namespace wort
