// tests/crashsim/concurrent_crash_toy.h — a persistent append log shared by concurrent writers,
// correct and in two broken variants that only a crash simulator with concurrent histories
// can catch (crashsim::run_concurrent_kv; tests/crashsim/concurrent_crash_test.cc).
//
//   root block (one allocation):
//     line 0   magic | count (the commit word: records [0, count) are the log) | pad
//     line 1.. record i at 64 + 16 i: key (8-byte keys only) | value (~0: removed)
//
// A writer reserves the next record (a DRAM counter), writes it, and commits `count`.
// A lookup takes the last record of its key among [0, count).
//
//   none            record stored, written back, fenced; then the writer waits until count
//                   equals its record (the commits go in record order) and commits
//                   count = record + 1. Correct with any number of writers on disjoint
//                   keys; on one key its insert / update / remove race (the presence check
//                   comes before the reservation): the history oracle's LIVE finding.
//   cover_others    the key and the value are written back and fenced one after the other,
//                   then count = every record reserved so far, committed at once: a writer
//                   that finishes first publishes the other writer's record while it is
//                   half written (its key durable, its value not). One writer: correct.
//   borrowed_fence  the record is written back, and if another writer is inside an
//                   operation the writer waits for THAT writer's next fence instead of
//                   issuing its own (group commit done wrong: an sfence orders only its own
//                   thread's write-backs), then commits in order. One writer: correct.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "pm/allocator.h"
#include "pm/persist.h"
#include "wort/index.h"

namespace wort::test {

enum class LogBug : std::uint8_t { none, cover_others, borrowed_fence };

//! The index kind of each variant, in LogBug's order.
inline constexpr std::string_view kLogKinds[] = {"toy_log", "toy_log_cover_others",
                                                 "toy_log_borrowed_fence"};
constexpr std::string_view log_kind(LogBug b) { return kLogKinds[static_cast<std::size_t>(b)]; }

template <LogBug B>
class ToyLog {
 public:
  static constexpr std::string_view kKind = log_kind(B);
  //! No lock in the Index handle: the concurrent simulator interleaves the writers (and its
  //! lock-free readers) inside their operations, where cover_others and borrowed_fence show.
  static constexpr bool kConcurrent = true;
  static constexpr std::size_t kMaxKeySize = kMaxKeyLength;
  static constexpr std::uint64_t kMagic = 0x746f796c6f673031ull;
  static constexpr std::uint64_t kSlots = 96;
  static constexpr Value kRemoved = ~Value{0};

  struct Record {
    std::uint64_t key;
    std::uint64_t value;
  };
  struct Root {
    std::uint64_t magic;
    std::uint64_t count;
    std::uint64_t pad[6];
    Record rec[kSlots];
  };
  static_assert(sizeof(Root) == 64 + 16 * kSlots);

  static Result<std::unique_ptr<ToyLog>> create(Pool& pool, const IndexOptions&) {
    std::uint64_t off = 0;
    if (Status s = pool.allocator().allocate(sizeof(Root), &off); s != Status::ok)
      return Error{s, "no room for the toy log"};
    Root* r = pool.at<Root>(off);
    pm::store(&r->magic, kMagic);
    pm::store(&r->count, std::uint64_t{0});
    pm::flush(r, 64);  // fenced by set_root's publish
    pool.set_root(off);
    return std::unique_ptr<ToyLog>(new ToyLog(pool, off));
  }

  static Result<std::unique_ptr<ToyLog>> open(Pool& pool) {
    const std::uint64_t off = pool.root();
    if (off == 0 || !pool.contains(off, sizeof(Root)) || pool.at<Root>(off)->magic != kMagic)
      return Error{Status::corrupt, "toy log: no root"};
    std::unique_ptr<ToyLog> t(new ToyLog(pool, off));
    auto rec = pool.allocator().recover([&](pm::BlockVisitor v) { return t->visit_blocks(v); });
    if (!rec) return rec.error();
    return t;
  }

  Status insert(Key k, Value v) { return write(k, v, Mode::insert); }
  Status upsert(Key k, Value v) { return write(k, v, Mode::upsert); }
  Status update(Key k, Value v) { return write(k, v, Mode::update); }
  Status remove(Key k) { return write(k, kRemoved, Mode::remove); }

  std::optional<Value> lookup(Key k) const {
    std::uint64_t key;
    if (!key_of(k, &key)) return std::nullopt;
    std::optional<Value> v;
    const std::uint64_t n = committed();
    for (std::uint64_t i = 0; i < n; ++i)
      if (root()->rec[i].key == key)
        v = root()->rec[i].value == kRemoved ? std::nullopt
                                             : std::optional<Value>(root()->rec[i].value);
    return v;
  }

  std::size_t scan(Key from, std::size_t max, Visitor vis) const {
    std::size_t done = 0;
    for (const auto& [k, v] : contents()) {
      if (done == max) break;
      if (compare_keys(as_key(k), from) < 0) continue;
      ++done;
      if (!vis(as_key(k), v)) break;
    }
    return done;
  }
  std::size_t range(Key lo, Key hi, Visitor vis) const {
    std::size_t done = 0;
    for (const auto& [k, v] : contents()) {
      if (compare_keys(as_key(k), lo) < 0) continue;
      if (compare_keys(as_key(k), hi) >= 0) break;
      ++done;
      if (!vis(as_key(k), v)) break;
    }
    return done;
  }
  IndexStats stats() const {
    IndexStats s;
    s.keys = contents().size();
    s.pm_bytes = sizeof(Root);
    return s;
  }
  Result<void> verify() const {
    if (__atomic_load_n(&root()->count, __ATOMIC_ACQUIRE) > kSlots)
      return Error{Status::corrupt, "toy log: count beyond the records"};
    return {};
  }
  void dump(std::ostream& os) const { os << kKind << " count=" << committed() << "\n"; }
  Result<void> visit_blocks(BlockVisitorFn v) const {
    v(root_off_);
    return {};
  }

 private:
  enum class Mode { insert, upsert, update, remove };

  ToyLog(Pool& pool, std::uint64_t off)
      : pool_(pool), root_off_(off), reserved_(std::min(root()->count, kSlots)) {}
  Root* root() const { return pool_.at<Root>(root_off_); }
  std::uint64_t committed() const {
    return std::min(__atomic_load_n(&root()->count, __ATOMIC_ACQUIRE), kSlots);
  }
  static bool key_of(Key k, std::uint64_t* out) {
    if (k.size() != 8) return false;
    std::memcpy(out, k.data(), 8);
    return true;
  }
  std::map<std::string, Value> contents() const {
    std::map<std::string, Value> m;
    const std::uint64_t n = committed();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string k(8, '\0');
      std::memcpy(k.data(), &root()->rec[i].key, 8);
      if (root()->rec[i].value == kRemoved) m.erase(k);
      else m[k] = root()->rec[i].value;
    }
    return m;
  }
  void fenced() { fences_.fetch_add(1, std::memory_order_acq_rel); }
  //! Spins (untraced) until `done` or the bound; true if `done` came.
  template <class Fn>
  static bool spin_until(Fn done, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done())
      if (std::chrono::steady_clock::now() > end) return false;
    return true;
  }

  Status write(Key k, Value v, Mode mode) {
    std::uint64_t key;
    if (!key_of(k, &key)) return Status::invalid_argument;
    const bool present = lookup(k).has_value();
    if (mode == Mode::insert && present) return Status::exists;
    if ((mode == Mode::update || mode == Mode::remove) && !present) return Status::not_found;
    inflight_.fetch_add(1, std::memory_order_acq_rel);
    const std::uint64_t slot = reserved_.fetch_add(1, std::memory_order_acq_rel);
    if (slot >= kSlots) {
      inflight_.fetch_sub(1, std::memory_order_acq_rel);
      return Status::out_of_space;
    }
    Record* r = &root()->rec[slot];
    if constexpr (B == LogBug::cover_others) {
      pm::store(&r->key, key);
      pm::persist(&r->key, 8);
      fenced();
      pm::store(&r->value, v);
      pm::persist(&r->value, 8);
      fenced();
      const std::uint64_t all = reserved_.load(std::memory_order_acquire);
      pm::commit(&root()->count, std::max(all, __atomic_load_n(&root()->count, __ATOMIC_ACQUIRE)));
    } else {
      pm::store(&r->key, key);
      pm::store(&r->value, v);
      pm::flush(r, sizeof *r);
      bool borrowed = false;
      if constexpr (B == LogBug::borrowed_fence) {
        if (inflight_.load(std::memory_order_acquire) > 1) {
          const std::uint64_t seen = fences_.load(std::memory_order_acquire);
          borrowed = spin_until([&] { return fences_.load(std::memory_order_acquire) != seen; }, 2.0);
        }
      }
      if (!borrowed) {
        pm::fence();
        fenced();
      }
      // commits in record order: wait for the writers of the records before this one
      spin_until([&] { return __atomic_load_n(&root()->count, __ATOMIC_ACQUIRE) == slot; }, 1e9);
      pm::commit(&root()->count, slot + 1);
    }
    fenced();
    inflight_.fetch_sub(1, std::memory_order_acq_rel);
    return Status::ok;
  }

  Pool& pool_;
  std::uint64_t root_off_;
  std::atomic<std::uint64_t> reserved_;
  std::atomic<int> inflight_{0};
  std::atomic<std::uint64_t> fences_{0};
};

}  // namespace wort::test
