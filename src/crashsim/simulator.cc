// crashsim/simulator.cc — event filtering, crash points, lints, image selection.
#include "crashsim/simulator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

namespace wort::crashsim {
namespace {

// Above this the UNTRACKED_STORE comparison stops at the model's extent instead of covering
// the whole range at every fence.
constexpr std::size_t kFullCompareLimit = 8u << 20;

std::string hex(std::size_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%zx", v);
  return buf;
}

}  // namespace

std::string_view lint_name(Lint l) noexcept {
  switch (l) {
    case Lint::missing_flush: return "MISSING_FLUSH";
    case Lint::missing_fence: return "MISSING_FENCE";
    case Lint::untracked_store: return "UNTRACKED_STORE";
    case Lint::redundant_flush: return "REDUNDANT_FLUSH";
    case Lint::redundant_fence: return "REDUNDANT_FENCE";
    case Lint::store_after_commit: return "STORE_AFTER_COMMIT";
    case Lint::assumed_durable: return "ASSUMED_DURABLE";
  }
  return "UNKNOWN";
}

void Simulator::watch(std::byte* base, std::size_t size, std::size_t extent, Gap gap) {
  base_ = base;
  size_ = size;
  model_.reset(base, size, extent, gap);
  compare_limit_ = size <= kFullCompareLimit ? size : 0;
  exploring_ = false;
  for (OpState& o : op_state_) o = OpState{};
  for (auto& v : nt_pending_) v.clear();
  nt_hidden_ = {};
  model_.set_thread(0);
  pending_nt_.clear();
}

bool Simulator::offset_of(const void* p, std::size_t* off) const noexcept {
  if (exploring_) return false;
  const auto* b = static_cast<const std::byte*>(p);
  if (b < base_ || b >= base_ + size_) return false;
  *off = static_cast<std::size_t>(b - base_);
  return true;
}

void Simulator::on_store(void* dst, const void* src, std::size_t len) {
  std::size_t off;
  if (!offset_of(dst, &off)) return;
  read_point();
  model_.store(off, src, len);
  // The commit's own store(s): into its word, before its fence.
  OpState& o = op();
  const bool into_commit = o.skip_commit_store && off >= o.commit_off && off + len <= o.commit_end;
  if (!into_commit && o.after_commit) {
    o.after_commit_stores.emplace_back(off, len);
  }
}

void Simulator::on_commit(void* dst, std::size_t len, bool shares_fence) {
  std::size_t off;
  if (!offset_of(dst, &off)) return;
  read_point();
  OpState& o = op();
  ++o.commits;
  o.skip_commit_store = true;
  o.commit_off = off;
  o.commit_end = off + len;
  o.after_commit = true;
  o.after_commit_stores.clear();
  if (!on_lint_ || shares_fence) return;
  // A flushed, unfenced line other than the commit's own may reach the media after the
  // commit store (stores to one line persist in order, so the commit's own line is safe).
  const std::size_t own_first = off & ~(kLine - 1), own_last = (off + len - 1) & ~(kLine - 1);
  std::size_t first = SIZE_MAX, n = 0;
  for (const auto& [line, log] : model_.lines()) {
    // this thread's write-backs only: another thread's are not this operation's to order
    if (log.marks[model_.thread()] == 0 || (line >= own_first && line <= own_last)) continue;
    if (first == SIZE_MAX) first = line;
    ++n;
  }
  if (n == 0) return;
  const auto site = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  lint(Lint::missing_fence, first, site,
       "commit store at offset " + hex(off) + " issued while " + std::to_string(n) +
           " line(s) flushed earlier are not fenced (they may become durable after the commit), "
           "first at offset " + hex(first));
}

void Simulator::on_alloc(void* p, std::size_t len) {
  std::size_t off;
  if (!offset_of(p, &off)) return;
  len = std::min(len, size_ - off);
  std::vector<std::byte> bytes(len, std::byte{0});
  if constexpr (kFreshBlocks == BlockBytes::unspecified) {
    std::uint64_t s = mix_seed(++junk_seq_, off);
    bool zero_line = false;
    for (std::size_t i = 0; i < len; i += 8) {
      s = mix_seed(s, i);
      if (i == 0 || (off + i) % 64 == 0) zero_line = (s >> 63) != 0;  // a coin per line
      if (!zero_line) std::memcpy(bytes.data() + i, &s, std::min<std::size_t>(8, len - i));
    }
  }
  // Memory, shadow and durable image all hold the guaranteed bytes; stores the index makes
  // from here on are logged as usual.
  if (!replaying_) std::memcpy(base_ + off, bytes.data(), len);
  model_.absorb(off, bytes.data(), len);
}

void Simulator::on_free(void* p, std::size_t len) {
  std::size_t off;
  if (!offset_of(p, &off)) return;
  len = std::min(len, size_ - off);
  // Stores into a block the operation frees are not stores after its commit.
  std::erase_if(op().after_commit_stores, [&](const std::pair<std::size_t, std::size_t>& s) {
    return s.first >= off && s.first + s.second <= off + len;
  });
  if constexpr (kFreshBlocks == BlockBytes::unspecified) on_alloc(p, len);  // junk from now on
}

void Simulator::on_assume_durable(void* p, std::size_t len) {
  std::size_t off;
  if (!offset_of(p, &off) || !on_lint_) return;
  for (std::size_t line = off & ~std::size_t{63}; line < off + len; line += 64)
    if (model_.line_unflushed(line))
      lint(Lint::assumed_durable, line, 0,
           "pm::copy_changed skipped the line at offset " + hex(line) +
               " as already holding its bytes, but a store there is not written back yet");
}

void Simulator::on_volatile_store(void* dst, const void* src, std::size_t len) {
  std::size_t off;
  if (!offset_of(dst, &off)) return;
  read_point();
  model_.store(off, src, len, /*needs_flush=*/false);
}

void Simulator::on_nt_store(void* dst, std::uint64_t value) {
  std::size_t off;
  if (!offset_of(dst, &off)) return;
  read_point();
  if (on_read_ && off + 8 <= size_) {  // called before the store: memory holds the old bytes
    std::uint64_t old;
    std::memcpy(&old, base_ + off, 8);
    pending_nt_.emplace_back(off, old);
  }
  if (track_nt_ && off + 8 <= size_) {
    std::uint64_t old;
    std::memcpy(&old, base_ + off, 8);
    nt_pending_[model_.thread()].push_back({off, old, value});
  }
  model_.nt_store(off, value);
}

void Simulator::hide_nt(std::size_t t) noexcept {
  if (nt_hidden_[t] || nt_pending_[t].empty()) return;
  const auto& v = nt_pending_[t];
  for (std::size_t i = v.size(); i-- > 0;) std::memcpy(base_ + v[i].off, &v[i].old, 8);
  nt_hidden_[t] = true;
}

void Simulator::show_nt(std::size_t t) noexcept {
  if (!nt_hidden_[t]) return;
  for (const PendingNt& p : nt_pending_[t]) std::memcpy(base_ + p.off, &p.now, 8);
  nt_hidden_[t] = false;
}

void Simulator::on_flush(const void* addr, std::size_t len) {
  std::size_t off;
  if (!offset_of(addr, &off)) return;
  read_point();
  const auto r = model_.flush(off, len);
  if (r.redundant_lines > 0 && on_lint_) {
    const auto site = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
    lint(Lint::redundant_flush, r.first_redundant, site,
         std::to_string(r.redundant_lines) + " of " + std::to_string(r.lines) +
             " flushed line(s) had no store since their last flush, first at offset " +
             hex(r.first_redundant));
  }
}

void Simulator::on_fence() {
  if (exploring_ || base_ == nullptr) return;
  const auto site = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  if (on_lint_) {
    if (!replaying_ && !untracked_paused_) check_untracked();
    if (model_.unfenced_lines() == 0)
      lint(Lint::redundant_fence, 0, site, "fence with no flushed line and no nt-store to order");
  }
  read_point();
  crash_point(false);
  model_.fence();
  pending_nt_.clear();  // durable now, hence visible
  nt_pending_[model_.thread()].clear();
  op().skip_commit_store = false;  // the commit's fence ends its store(s)
}

void Simulator::acknowledge() {
  if (base_ == nullptr) return;
  read_point();
  if (on_lint_) {
    if (!replaying_ && !untracked_paused_) check_untracked();
    const auto& stores = op().after_commit_stores;
    if (!stores.empty()) {
      std::size_t bytes = 0;
      for (const auto& s : stores) bytes += s.second;
      lint(Lint::store_after_commit, stores.front().first, 0,
           std::to_string(stores.size()) + " pool store(s) (" +
               std::to_string(bytes) + " bytes) after the operation's last commit store, "
               "first at offset " + hex(stores.front().first));
    }
    if (const std::size_t line = model_.first_unflushed(); line != SIZE_MAX)
      lint(Lint::missing_flush, line, 0,
           std::to_string(model_.unflushed_lines()) +
               " line(s) hold stores never flushed at the acknowledgement, first at offset " +
               hex(line));
    if (const std::size_t line = model_.first_unfenced(); line != SIZE_MAX)
      lint(Lint::missing_fence, line, 0,
           std::to_string(model_.unfenced_lines()) +
               " line(s) flushed but not fenced at the acknowledgement, first at offset " +
               hex(line));
  }
  op() = OpState{};
  crash_point(true);
}

void Simulator::crash_point(bool at_ack) {
  if (!on_point_ || !crash_points_) return;
  exploring_ = true;
  on_point_(at_ack);
  exploring_ = false;
}

void Simulator::read_point() {
  if (!on_read_ || reading_ || exploring_ || base_ == nullptr) return;
  reading_ = true;
  std::vector<std::uint64_t> now(pending_nt_.size());
  for (std::size_t i = pending_nt_.size(); i-- > 0;) {  // newest first: the oldest bytes win
    std::memcpy(&now[i], base_ + pending_nt_[i].first, 8);
    std::memcpy(base_ + pending_nt_[i].first, &pending_nt_[i].second, 8);
  }
  on_read_();
  for (std::size_t i = 0; i < pending_nt_.size(); ++i)
    std::memcpy(base_ + pending_nt_[i].first, &now[i], 8);
  reading_ = false;
}

void Simulator::check_untracked() {
  const std::size_t limit = std::min(
      size_, std::max(compare_limit_fn_ ? compare_limit_fn_() : compare_limit_, model_.extent()));
  constexpr std::size_t kBlock = 4096;
  std::size_t first = SIZE_MAX, bytes = 0;
  for_each_outside(model_.gap(), 0, limit, [&](std::size_t from, std::size_t len) {
    for (std::size_t b = from; b < from + len; b += kBlock) {
      const std::size_t n = std::min(kBlock, from + len - b);
      if (std::memcmp(base_ + b, model_.shadow() + b, n) == 0) continue;
      for (std::size_t i = b; i < b + n; ++i) {
        if (base_[i] == model_.shadow()[i]) continue;
        if (first == SIZE_MAX) first = i;
        ++bytes;
        model_.absorb(i, base_ + i, 1);
      }
    }
  });
  if (first != SIZE_MAX)
    lint(Lint::untracked_store, first, 0,
         std::to_string(bytes) + " byte(s) of pool memory changed without pm::store/copy/fill, "
         "first at offset " + hex(first));
}

void ExtentTracker::note(void* dst, std::size_t len) noexcept {
  const auto* b = static_cast<const std::byte*>(dst);
  if (b < base_ || b >= base_ + size_) return;
  end_ = std::max(end_, std::min(size_, static_cast<std::size_t>(b - base_) + len));
}

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

// Walks every choice vector in [0, limits] like an odometer.
void enumerate_all(std::span<const std::uint32_t> limits,
                   FunctionRef<void(std::span<const std::uint32_t>)> fn) {
  std::vector<std::uint32_t> c(limits.size(), 0);
  for (;;) {
    fn(c);
    std::size_t i = 0;
    while (i < c.size() && c[i] == limits[i]) c[i++] = 0;
    if (i == c.size()) return;
    ++c[i];
  }
}

}  // namespace

void select_images(std::span<const std::uint32_t> limits, std::size_t cap,
                   std::size_t random_samples, std::uint64_t seed,
                   FunctionRef<void(std::span<const std::uint32_t>)> fn,
                   std::size_t pair_lines) {
  std::uint64_t count = 1;
  for (std::uint32_t l : limits) {
    count *= l + 1u;
    if (count > cap) break;
  }
  if (count <= cap) return enumerate_all(limits, fn);

  std::set<std::vector<std::uint32_t>> seen;
  auto emit = [&](std::vector<std::uint32_t> c) {
    if (seen.insert(c).second) fn(c);
  };
  const std::size_t n = limits.size();
  std::vector<std::uint32_t> none(n, 0), all(limits.begin(), limits.end());
  emit(none);
  emit(all);
  for (std::size_t i = 0; i < n; ++i) {
    auto c = none;
    c[i] = limits[i];
    emit(std::move(c));
  }
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> pick(n);
  for (std::size_t i = 0; i < n; ++i) pick[i] = i;
  if (n > pair_lines) {
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(pair_lines);
    std::sort(pick.begin(), pick.end());
  }
  for (std::size_t a = 0; a < pick.size(); ++a)
    for (std::size_t b = a + 1; b < pick.size(); ++b) {
      auto c = none;
      c[pick[a]] = limits[pick[a]];
      c[pick[b]] = limits[pick[b]];
      emit(std::move(c));
    }
  for (std::size_t s = 0; s < random_samples; ++s) {
    std::vector<std::uint32_t> c(n);
    for (std::size_t i = 0; i < n; ++i) c[i] = static_cast<std::uint32_t>(rng() % (limits[i] + 1u));
    emit(std::move(c));
  }
}

}  // namespace wort::crashsim
