// store_compare — wort::Store against LMDB and RocksDB on the same machine, in the same
// directory, at the same durability: an operation survives `kill -9` of the process once it
// returned (not a power loss) on a file that is not DAX-mapped.
//
//   wort::Store  a pool file on the directory; every write is written back and committed
//                before it returns (the library's normal mode).
//   LMDB         MDB_WRITEMAP | MDB_NOSYNC: each commit writes the shared map in place and
//                skips msync/fsync, so a commit is in the page cache when it returns.
//   RocksDB      the WAL on, WriteOptions::sync false: each write is in the WAL file (the
//                page cache) when it returns. No compression (random values), a block
//                cache as large as the data set and bloom filters (its setup for reads).
//
// Keys of 16 bytes, values of 100 B and 1 KB; one operation per transaction / commit. For each
// round, value size and thread count every engine in turn (the order rotated per round, so
// the machine's drift and other jobs' load fall on all alike) builds a fresh database in the
// directory and times five phases: put (insert every key, random order), get (every key once,
// random order, each value compared with the one expected), update (every key replaced,
// random order), scan (keys/100 scans of 100 keys from a random key, every key and value
// compared), remove (every key, random order, each must have been there); then the database
// is deleted. Threads split each phase's operations. RocksDB's background flushes and
// compactions that a write phase leaves pending are waited for inside that phase's timing
// (they are its cost). Per phase: wall time, the process's CPU time (the working threads and
// any engine's own background threads) and the working threads' CPU time, per operation.
// Any wrong answer: a message and exit 1.
#include <lmdb.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "wort/store.h"

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "store_compare: %s\n", why.c_str());
  std::exit(1);
}

std::uint64_t now_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void put_be64(char* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v & 0xff);
}

//! Key i: 8 bytes of a hash of i (so key order is not insertion order), then i, big-endian.
std::string key_of(std::uint64_t i) {
  std::string k(16, '\0');
  put_be64(k.data(), mix64(i));
  put_be64(k.data() + 8, i);
  return k;
}

//! The value key i holds at `version`: i and version in its first bytes, then bytes of a
//! fixed random pool from an offset that depends on both (cheap, and no two alike).
class Values {
 public:
  explicit Values(std::size_t size) : size_(size), pool_(size + 65536) {
    std::mt19937_64 g(7);
    for (char& c : pool_) c = static_cast<char>(g());
  }
  std::size_t size() const { return size_; }
  void make(std::uint64_t i, std::uint32_t version, std::string* out) const {
    out->resize(size_);
    const std::size_t off = mix64(i * 31 + version) % 65536;
    std::memcpy(out->data(), pool_.data() + off, size_);
    if (size_ >= 12) {
      put_be64(out->data(), i);
      std::memcpy(out->data() + 8, &version, 4);
    }
  }

 private:
  std::size_t size_;
  std::vector<char> pool_;
};

// --- the engines ---------------------------------------------------------------------------

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual void open(const std::string& dir, std::size_t keys, std::size_t value_size) = 0;
  virtual void close() = 0;
  //! Insert a key that is not there (false: a wrong answer, e.g. it was there).
  virtual bool insert(std::string_view k, std::string_view v) = 0;
  virtual bool update(std::string_view k, std::string_view v) = 0;
  //! Calls check with the value in place (or nullptr when absent); its answer.
  virtual bool get(std::string_view k, const std::function<bool(const std::string_view*)>& check) = 0;
  //! The first n keys >= k, ascending, each passed to fn (false stops: a wrong answer).
  virtual bool scan(std::string_view k, std::size_t n,
                    const std::function<bool(std::string_view, std::string_view)>& fn) = 0;
  //! Remove a key that is there (false if it was not, where the engine can tell).
  virtual bool remove(std::string_view k) = 0;
  //! Waits until the engine's background work is done (RocksDB: flushes and compactions).
  virtual void settle() {}
  //! Thread setup/teardown (per working thread).
  virtual void thread_begin() {}
  virtual void thread_end() {}
};

class StoreEngine : public Engine {
 public:
  explicit StoreEngine(std::string kind) : kind_(std::move(kind)) {}
  std::string name() const override { return "store-" + kind_; }
  void open(const std::string& dir, std::size_t keys, std::size_t value_size) override {
    path_ = dir + "/store-" + kind_ + ".pool";
    std::filesystem::remove(path_);
    wort::StoreOptions o;
    o.kind = kind_;
    // A value blob is one block: 16-byte header, key, value; blocks round up to a class
    // size, a replaced value is freed after its replacement, and the index takes its part.
    o.size = std::uint64_t(keys) * (2 * (value_size + 64) + 256) + (256ull << 20);
    auto db = wort::Store::open(path_, o);
    if (!db) die("Store::open " + path_ + ": " + db.error().message);
    db_ = std::move(*db);
  }
  void close() override {
    db_.reset();
    std::filesystem::remove(path_);
  }
  bool insert(std::string_view k, std::string_view v) override {
    return db_->put(k, v) == wort::Status::ok;
  }
  bool update(std::string_view k, std::string_view v) override {
    return db_->put(k, v) == wort::Status::ok;
  }
  bool get(std::string_view k, const std::function<bool(const std::string_view*)>& check) override {
    bool ok = false;
    const wort::Status s = db_->read(k, [&](std::string_view v) { ok = check(&v); });
    if (s == wort::Status::not_found) return check(nullptr);
    return s == wort::Status::ok && ok;
  }
  bool scan(std::string_view k, std::size_t n,
            const std::function<bool(std::string_view, std::string_view)>& fn) override {
    auto c = db_->cursor(k);
    for (std::size_t i = 0; i < n && c.valid(); ++i, c.next())
      if (!fn(c.key(), c.value())) return false;
    return c.status() == wort::Status::ok;
  }
  bool remove(std::string_view k) override {
    auto r = db_->remove(k);
    return r.ok() && *r;
  }

 private:
  std::string kind_, path_;
  std::unique_ptr<wort::Store> db_;
};

class LmdbEngine : public Engine {
 public:
  std::string name() const override { return "lmdb"; }
  void open(const std::string& dir, std::size_t keys, std::size_t value_size) override {
    dir_ = dir + "/lmdb";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    check(mdb_env_create(&env_), "mdb_env_create");
    // Leaf pages hold 100 B and 1 KB values inline; copy-on-write pages and the free list
    // take some more: three times the data, and 256 MiB.
    const std::size_t map = keys * (value_size + 16 + 16) * 3 + (256ull << 20);
    check(mdb_env_set_mapsize(env_, map), "mdb_env_set_mapsize");
    check(mdb_env_set_maxreaders(env_, 64), "mdb_env_set_maxreaders");
    check(mdb_env_open(env_, dir_.c_str(), MDB_WRITEMAP | MDB_NOSYNC | MDB_NORDAHEAD, 0644),
          "mdb_env_open");
    MDB_txn* t = nullptr;
    check(mdb_txn_begin(env_, nullptr, 0, &t), "mdb_txn_begin");
    check(mdb_dbi_open(t, nullptr, 0, &dbi_), "mdb_dbi_open");
    check(mdb_txn_commit(t), "mdb_txn_commit");
  }
  void close() override {
    mdb_env_close(env_);
    env_ = nullptr;
    std::filesystem::remove_all(dir_);
  }
  // Readers: one read transaction and cursor per thread, reset after each operation and
  // renewed for the next (LMDB's cheap way to run one read per transaction).
  void thread_begin() override {
    check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &rtxn_), "mdb_txn_begin(rdonly)");
    check(mdb_cursor_open(rtxn_, dbi_, &rcur_), "mdb_cursor_open");
    mdb_txn_reset(rtxn_);
  }
  void thread_end() override {
    mdb_cursor_close(rcur_);
    mdb_txn_abort(rtxn_);
    rcur_ = nullptr;
    rtxn_ = nullptr;
  }
  bool insert(std::string_view k, std::string_view v) override { return write(k, v, MDB_NOOVERWRITE); }
  bool update(std::string_view k, std::string_view v) override { return write(k, v, 0); }
  bool get(std::string_view k, const std::function<bool(const std::string_view*)>& fn) override {
    check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{};
    const int rc = mdb_get(rtxn_, dbi_, &key, &val);
    bool ok;
    if (rc == MDB_NOTFOUND) {
      ok = fn(nullptr);
    } else {
      check(rc, "mdb_get");
      const std::string_view v(static_cast<const char*>(val.mv_data), val.mv_size);
      ok = fn(&v);
    }
    mdb_txn_reset(rtxn_);
    return ok;
  }
  bool scan(std::string_view k, std::size_t n,
            const std::function<bool(std::string_view, std::string_view)>& fn) override {
    check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
    check(mdb_cursor_renew(rtxn_, rcur_), "mdb_cursor_renew");
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{};
    bool ok = true;
    int rc = mdb_cursor_get(rcur_, &key, &val, MDB_SET_RANGE);
    for (std::size_t i = 0; i < n && rc == 0 && ok; ++i) {
      ok = fn({static_cast<const char*>(key.mv_data), key.mv_size},
              {static_cast<const char*>(val.mv_data), val.mv_size});
      if (i + 1 < n) rc = mdb_cursor_get(rcur_, &key, &val, MDB_NEXT);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) check(rc, "mdb_cursor_get");
    mdb_txn_reset(rtxn_);
    return ok;
  }
  bool remove(std::string_view k) override {
    MDB_txn* t = nullptr;
    check(mdb_txn_begin(env_, nullptr, 0, &t), "mdb_txn_begin");
    MDB_val key{k.size(), const_cast<char*>(k.data())};
    const int rc = mdb_del(t, dbi_, &key, nullptr);
    if (rc != 0) {
      mdb_txn_abort(t);
      return false;
    }
    check(mdb_txn_commit(t), "mdb_txn_commit");
    return true;
  }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) die(std::string(what) + ": " + mdb_strerror(rc));
  }
  bool write(std::string_view k, std::string_view v, unsigned flags) {
    MDB_txn* t = nullptr;
    check(mdb_txn_begin(env_, nullptr, 0, &t), "mdb_txn_begin");
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{v.size(), const_cast<char*>(v.data())};
    const int rc = mdb_put(t, dbi_, &key, &val, flags);
    if (rc != 0) {
      mdb_txn_abort(t);
      if (rc != MDB_KEYEXIST) check(rc, "mdb_put");
      return false;
    }
    check(mdb_txn_commit(t), "mdb_txn_commit");
    return true;
  }
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  static thread_local MDB_txn* rtxn_;
  static thread_local MDB_cursor* rcur_;
};
thread_local MDB_txn* LmdbEngine::rtxn_ = nullptr;
thread_local MDB_cursor* LmdbEngine::rcur_ = nullptr;

class RocksEngine : public Engine {
 public:
  std::string name() const override { return "rocksdb"; }
  void open(const std::string& dir, std::size_t keys, std::size_t value_size) override {
    dir_ = dir + "/rocksdb";
    std::filesystem::remove_all(dir_);
    rocksdb::Options o;
    o.create_if_missing = true;
    o.compression = rocksdb::kNoCompression;  // the values are random bytes
    // A block cache that holds the whole data set (the store and LMDB read their data in
    // place from memory; the default 8 MiB cache would send RocksDB's reads to pread and
    // the block checksum), and bloom filters: RocksDB's usual setup for point reads.
    rocksdb::BlockBasedTableOptions t;
    t.block_cache = rocksdb::NewLRUCache(keys * (value_size + 64) + (64ull << 20));
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    rocksdb::DB* db = nullptr;
    const rocksdb::Status s = rocksdb::DB::Open(o, dir_, &db);
    if (!s.ok()) die("rocksdb open " + dir_ + ": " + s.ToString());
    db_.reset(db);
    wo_.sync = false;
    wo_.disableWAL = false;
  }
  void close() override {
    if (db_) {
      const rocksdb::Status s = db_->Close();
      if (!s.ok()) die("rocksdb close: " + s.ToString());
    }
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool insert(std::string_view k, std::string_view v) override { return put(k, v); }
  bool update(std::string_view k, std::string_view v) override { return put(k, v); }
  bool get(std::string_view k, const std::function<bool(const std::string_view*)>& fn) override {
    rocksdb::PinnableSlice v;
    const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(),
                                       rocksdb::Slice(k.data(), k.size()), &v);
    if (s.IsNotFound()) return fn(nullptr);
    if (!s.ok()) die("rocksdb get: " + s.ToString());
    const std::string_view sv(v.data(), v.size());
    return fn(&sv);
  }
  bool scan(std::string_view k, std::size_t n,
            const std::function<bool(std::string_view, std::string_view)>& fn) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::size_t i = 0;
    for (it->Seek(rocksdb::Slice(k.data(), k.size())); i < n && it->Valid(); ++i, it->Next()) {
      if (!fn({it->key().data(), it->key().size()}, {it->value().data(), it->value().size()}))
        return false;
    }
    if (!it->status().ok()) die("rocksdb iterator: " + it->status().ToString());
    return true;
  }
  bool remove(std::string_view k) override {  // RocksDB cannot tell whether k was there
    const rocksdb::Status s = db_->Delete(wo_, rocksdb::Slice(k.data(), k.size()));
    if (!s.ok()) die("rocksdb delete: " + s.ToString());
    return true;
  }
  void settle() override {
    for (;;) {
      std::uint64_t busy = 0, v = 0;
      for (const char* p : {"rocksdb.num-running-compactions", "rocksdb.num-running-flushes",
                            "rocksdb.compaction-pending", "rocksdb.mem-table-flush-pending"})
        if (db_->GetIntProperty(p, &v)) busy += v;
      if (busy == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  bool put(std::string_view k, std::string_view v) {
    const rocksdb::Status s =
        db_->Put(wo_, rocksdb::Slice(k.data(), k.size()), rocksdb::Slice(v.data(), v.size()));
    if (!s.ok()) die("rocksdb put: " + s.ToString());
    return true;
  }
  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions wo_;
};

// --- the measurement ------------------------------------------------------------------------

struct Phase {
  std::string op;
  std::uint64_t ops = 0, wall_ns = 0, cpu_ns = 0, thread_cpu_ns = 0;
};

struct Row {
  int round;
  std::string engine;
  std::size_t value_size;
  int threads;
  Phase p;
};

constexpr std::size_t kScanLen = 100;

//! An engine's wrong answer (its message); the run fails, or with --wrong-values it is the
//! answer expected.
struct WrongAnswer {
  std::string what;
};

//! --wrong-values (a test of the checks): the get phase expects values no engine holds.
bool g_wrong_values = false;

//! Runs `body(thread, lo, hi)` on `threads` threads splitting [0, n); times the phase.
Phase timed(Engine& e, const char* op, int threads, std::size_t n, bool settle,
            const std::function<bool(std::size_t)>& body) {
  Phase p;
  p.op = op;
  p.ops = n;
  std::atomic<std::uint64_t> thread_cpu{0};
  std::atomic<bool> wrong{false};
  std::atomic<std::size_t> wrong_at{0};
  const std::uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      e.thread_begin();
      const std::uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
      const std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (std::size_t i = lo; i < hi; ++i)
        if (!body(i)) {
          wrong = true;
          wrong_at = i;
          break;
        }
      thread_cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
      e.thread_end();
    });
  }
  for (auto& t : ts) t.join();
  if (settle) e.settle();
  p.wall_ns = now_ns(CLOCK_MONOTONIC) - w0;
  p.cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
  p.thread_cpu_ns = thread_cpu;
  if (wrong)
    throw WrongAnswer{e.name() + ": wrong answer in " + op + " (operation " +
                      std::to_string(wrong_at.load()) + ")"};
  return p;
}

std::vector<Phase> run_one(Engine& e, const std::string& dir, std::size_t keys, const Values& vals,
                           int threads, std::uint64_t seed, const std::vector<std::string>& key,
                           const std::vector<std::uint32_t>& sorted) {
  std::mt19937_64 g(seed);
  auto perm = [&] {
    std::vector<std::uint32_t> p(keys);
    std::iota(p.begin(), p.end(), 0u);
    std::shuffle(p.begin(), p.end(), g);
    return p;
  };
  const auto ins = perm(), look = perm(), upd = perm(), del = perm();
  const std::size_t scans = std::max<std::size_t>(keys / kScanLen, 100);
  std::vector<std::uint32_t> scan_at(scans);
  for (auto& s : scan_at) s = static_cast<std::uint32_t>(g() % keys);
  e.open(dir, keys, vals.size());
  std::vector<Phase> out;
  try {
  thread_local std::string buf;
  out.push_back(timed(e, "put", threads, keys, true, [&](std::size_t i) {
    vals.make(ins[i], 1, &buf);
    return e.insert(key[ins[i]], buf);
  }));
  out.push_back(timed(e, "get", threads, keys, false, [&](std::size_t i) {
    const std::uint32_t k = look[i];
    vals.make(k, g_wrong_values ? 9 : 1, &buf);
    return e.get(key[k], [&](const std::string_view* v) { return v && *v == buf; });
  }));
  out.push_back(timed(e, "update", threads, keys, true, [&](std::size_t i) {
    vals.make(upd[i], 2, &buf);
    return e.update(key[upd[i]], buf);
  }));
  out.push_back(timed(e, "scan100", threads, scans, false, [&](std::size_t i) {
    const std::size_t r = scan_at[i];  // rank of the first key in key order
    std::size_t j = 0;
    const bool ok = e.scan(key[sorted[r]], kScanLen, [&](std::string_view k, std::string_view v) {
      if (r + j >= keys || k != key[sorted[r + j]]) return false;
      vals.make(sorted[r + j], 2, &buf);
      ++j;
      return v == buf;
    });
    return ok && j == std::min(kScanLen, keys - r);
  }));
  out.push_back(timed(e, "remove", threads, keys, true, [&](std::size_t i) {
    return e.remove(key[del[i]]);
  }));
  // Nothing left: every key's get answers absent.
  for (std::size_t i = 0; i < keys; i += std::max<std::size_t>(1, keys / 1000)) {
    e.thread_begin();
    const bool ok = e.get(key[i], [](const std::string_view* v) { return v == nullptr; });
    e.thread_end();
    if (!ok) throw WrongAnswer{e.name() + ": a removed key is still there"};
  }
  } catch (const WrongAnswer&) {
    e.close();
    throw;
  }
  e.close();
  return out;
}

//! The source tree's commit, "-dirty" when tracked files differ from it.
std::string git_revision() {
  auto run = [](const std::string& cmd) {
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[256];
      while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  };
  const std::string src = WORT_SOURCE_DIR;
  std::string rev = run("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (rev.empty()) return "unknown";
  if (!run("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null").empty())
    rev += "-dirty";
  return rev;
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

constexpr const char* kHelp = R"(usage: store_compare [--keys N] [--rounds R] [--values 100,1024] [--threads 1,2]
                     [--kinds wort,fastfair] [--dir /dev/shm] [--json FILE] [--quick]

wort::Store (one per index kind) against LMDB and RocksDB, each at the durability of
"survives kill -9, not power loss" on a non-DAX file: random put, get, update, remove and
100-key scans of 16-byte keys, one operation per transaction, engines interleaved in rounds.
Every answer is checked (exit 1 on a wrong one). --quick: --keys 2000 --rounds 1.
--wrong-values: a test of those checks: the gets expect values no engine holds; exit 0 only
if every engine's run was stopped by a wrong answer.
)";

}  // namespace

int main(int argc, char** argv) {
  std::size_t keys = 1000000;
  int rounds = 3;
  std::vector<std::size_t> values{100, 1024};
  std::vector<int> threads{1, 2};
  std::vector<std::string> kinds{"wort", "fastfair"};
  std::string dir = "/dev/shm", json;
  std::string cmdline = "build/store_compare";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    cmdline += " " + a;
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value after " + a);
      cmdline += std::string(" ") + argv[i + 1];
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--keys") {
      keys = std::stoull(next());
    } else if (a == "--rounds") {
      rounds = std::stoi(next());
    } else if (a == "--values") {
      values.clear();
      for (auto& v : split(next())) values.push_back(std::stoull(v));
    } else if (a == "--threads") {
      threads.clear();
      for (auto& v : split(next())) threads.push_back(std::stoi(v));
    } else if (a == "--kinds") {
      kinds = split(next());
    } else if (a == "--dir") {
      dir = next();
    } else if (a == "--json") {
      json = next();
    } else if (a == "--wrong-values") {
      g_wrong_values = true;
    } else if (a == "--quick") {
      keys = 2000;
      rounds = 1;
    } else {
      std::fprintf(stderr, "store_compare: unexpected argument '%s'\n%s", a.c_str(), kHelp);
      return 2;
    }
  }
  if (keys < kScanLen || rounds < 1 || values.empty() || threads.empty())
    die("need --keys >= 100, --rounds >= 1, a value size and a thread count");
  const std::string work = dir + "/store_compare-" + std::to_string(::getpid());
  std::filesystem::create_directories(work);

  std::vector<std::unique_ptr<Engine>> engines;
  for (const auto& k : kinds) engines.push_back(std::make_unique<StoreEngine>(k));
  engines.push_back(std::make_unique<LmdbEngine>());
  engines.push_back(std::make_unique<RocksEngine>());

  std::vector<std::string> key(keys);
  for (std::size_t i = 0; i < keys; ++i) key[i] = key_of(i);
  std::vector<std::uint32_t> sorted(keys);
  std::iota(sorted.begin(), sorted.end(), 0u);
  std::sort(sorted.begin(), sorted.end(), [&](auto a, auto b) { return key[a] < key[b]; });

  std::size_t caught = 0;  // --wrong-values: engines whose wrong get was caught
  const std::string load_start = loadavg();
  const auto t_start = std::chrono::system_clock::now();
  std::vector<Row> rows;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t vs : values) {
      const Values vals(vs);
      for (int t : threads) {
        for (std::size_t j = 0; j < engines.size(); ++j) {
          Engine& e = *engines[(j + r) % engines.size()];
          const std::uint64_t seed = 1000 * r + 10 * t + vs;  // same operations for every engine
          std::vector<Phase> phases;
          try {
            phases = run_one(e, work, keys, vals, t, seed, key, sorted);
          } catch (const WrongAnswer& w) {
            std::fprintf(stderr, "store_compare: %s\n", w.what.c_str());
            if (!g_wrong_values) {
              std::filesystem::remove_all(work);
              return 1;
            }
            ++caught;
            continue;
          }
          if (g_wrong_values) {
            std::fprintf(stderr, "store_compare: %s answered values it does not hold\n",
                         e.name().c_str());
            std::filesystem::remove_all(work);
            return 1;
          }
          for (const Phase& p : phases) {
            rows.push_back({r, e.name(), vs, t, p});
            std::printf("round %d  %-15s value %5zu  threads %d  %-8s %9.0f ns/op cpu %9.0f ns/op wall\n",
                        r, e.name().c_str(), vs, t, p.op.c_str(), double(p.cpu_ns) / p.ops,
                        double(p.wall_ns) / p.ops);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  const std::string load_end = loadavg();
  const double minutes =
      std::chrono::duration<double>(std::chrono::system_clock::now() - t_start).count() / 60;
  std::filesystem::remove_all(work);
  if (g_wrong_values) {
    std::printf("every engine's wrong answers caught (%zu runs)\n", caught);
    return 0;
  }
  std::printf("load average: %s at the start, %s at the end; %.1f min\n", load_start.c_str(),
              load_end.c_str(), minutes);

  if (!json.empty()) {
    std::ofstream f(json);
    const std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
    utsname u{};
    uname(&u);
    f << "{\n  \"tool\": \"store_compare\",\n  \"command_line\": " << json_str(cmdline)
      << ",\n  \"git_revision\": " << json_str(git_revision()) << ",\n  \"date\": "
      << json_str(date) << ",\n  \"host\": " << json_str(std::string(u.sysname) + " " + u.release)
      << ",\n  \"cpus\": " << std::thread::hardware_concurrency() << ",\n  \"dir\": "
      << json_str(dir) << ",\n  \"keys\": " << keys << ",\n  \"key_bytes\": 16,\n  \"rounds\": "
      << rounds << ",\n  \"scan_len\": " << kScanLen << ",\n  \"load_start\": "
      << json_str(load_start) << ",\n  \"load_end\": " << json_str(load_end)
      << ",\n  \"minutes\": " << minutes << ",\n  \"lmdb\": "
      << json_str(std::string(MDB_VERSION_STRING) + ", MDB_WRITEMAP|MDB_NOSYNC|MDB_NORDAHEAD")
      << ",\n  \"rocksdb\": "
      << json_str(std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                  std::to_string(ROCKSDB_PATCH) +
                  ", WAL on, sync off, no compression, block cache of the data set's size, "
                  "bloom filters of 10 bits per key")
      << ",\n  \"engines\": [";
    for (std::size_t j = 0; j < engines.size(); ++j) f << (j ? ", " : "") << json_str(engines[j]->name());
    f << "],\n  \"rows\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& w = rows[i];
      f << "    {\"round\": " << w.round << ", \"engine\": " << json_str(w.engine)
        << ", \"value_size\": " << w.value_size << ", \"threads\": " << w.threads
        << ", \"op\": " << json_str(w.p.op) << ", \"ops\": " << w.p.ops
        << ", \"wall_ns\": " << w.p.wall_ns << ", \"cpu_ns\": " << w.p.cpu_ns
        << ", \"thread_cpu_ns\": " << w.p.thread_cpu_ns << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    f << "  ]\n}\n";
    if (!f) die("cannot write " + json);
  }
  return 0;
}
