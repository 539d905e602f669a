// crashsim/simulator.h — the pm::Tracer that feeds the Px86 model, finds crash points and
// runs the lints.
//
// A Simulator watches one address range (a pool). Events outside it are ignored, and so is
// everything while the simulator is exploring: recovery of a crash image runs nested inside
// on_fence, on a copy of the image in another buffer.
//
// Crash points: before every fence (inside on_fence, before the model applies it) and at
// each acknowledgement (the caller calls acknowledge() after an operation returns). At each
// the point handler is called; it asks the model for images (select_images below).
//
// Lints, on every event without enumeration:
//   at an acknowledgement  MISSING_FLUSH (a store after its line's mark), MISSING_FENCE
//                          (a mark not fenced), UNTRACKED_STORE (memory differs from the
//                          shadow: a store that bypassed pm::store / pm::copy)
//   at a fence             UNTRACKED_STORE, REDUNDANT_FENCE (no line had a mark)
//   at a flush             REDUNDANT_FLUSH (a covered line had no store since its mark)
//   at a commit            MISSING_FENCE (a line other than the commit's own was flushed and
//                          is not fenced yet: it may become durable after the commit; not for
//                          pm::commit_sharing_fence, whose index declared either order safe)
//   at an acknowledgement  STORE_AFTER_COMMIT (a pool store after the operation's last commit,
//                          outside the blocks the operation freed)
//   at a skipped line      ASSUMED_DURABLE (pm::copy_changed left a line alone because memory
//                          already held its bytes, but a store there still waits for its
//                          write-back: the bytes are not durable)
//
// Read points (opt-in, set_read_handler): at every event of the watched run, before it
// applies, and at each acknowledgement, the handler is called with pool memory as another
// thread could read it at that moment: every earlier store applied (x86-TSO: a store is
// visible to other cores before it is written back), but a non-temporal store not yet
// fenced hidden (its old bytes put back for the call): a movnti reaches other cores only
// through the memory controller, that is when it is durable. The harness's DIRTY_READ
// oracle looks up the in-flight key there from another thread.
//
// Allocated and freed blocks (Tracer::on_alloc / on_free): their bytes are what the
// allocator guarantees, kFreshBlocks below, the one switch: today unspecified, so the
// simulator fills them with junk in memory, in the shadow and in the durable image: each
// 64-byte line, by a seeded coin, either pseudo-random bytes or zeros (a never-used chunk
// reads zero, a reused block holds its previous owner's bytes). A block reused inside the
// traced run then cannot mask a missing write-back with the durable bytes its previous
// owner left, a read of a freed block sees junk, and pm::copy_changed meets both lines it
// must write and lines it may skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <array>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crashsim/px86.h"
#include "pm/tracer.h"
#include "wort/function_ref.h"

namespace wort::crashsim {

enum class Lint : std::uint8_t {
  missing_flush,
  missing_fence,
  untracked_store,
  redundant_flush,
  redundant_fence,
  store_after_commit,
  assumed_durable
};

//! What the allocator guarantees about the bytes of a block it hands out or takes back
//! (src/pm/allocator.h, Allocator::allocate: "The content is unspecified (not zeroed)").
enum class BlockBytes : std::uint8_t {
  unspecified,     //!< junk: per line seeded pseudo-random bytes or zeros, durable
  zeroed_durable   //!< zero, and durable before allocate returns
};
//! THE switch: change it together with the allocator's contract, nowhere else.
inline constexpr BlockBytes kFreshBlocks = BlockBytes::unspecified;
//! "MISSING_FLUSH", ... (the finding kinds of harness.h).
std::string_view lint_name(Lint l) noexcept;

class Simulator final : public pm::Tracer {
 public:
  //! Called at each crash point; `at_ack` tells an acknowledgement from a fence.
  using PointHandler = std::function<void(bool at_ack)>;
  //! Called for each lint: kind, pool offset it concerns, code address of the flush or fence
  //! (0 at an acknowledgement), a description.
  using LintHandler =
      std::function<void(Lint, std::size_t offset, std::uintptr_t site, const std::string&)>;

  //! Starts watching [base, base+size); its current contents count as durable. Bytes from
  //! `extent` on must be zero (a hint that saves copying; pass size if unsure). `gap`: a
  //! part of the range nothing stores into (a pool's gap, crashsim/sparse.h), left out of
  //! the model's copies and of the UNTRACKED_STORE comparison.
  void watch(std::byte* base, std::size_t size, std::size_t extent, Gap gap = {});
  void set_point_handler(PointHandler h) { on_point_ = std::move(h); }
  //! Called at each read point (see above); none by default.
  using ReadHandler = std::function<void()>;
  void set_read_handler(ReadHandler h) { on_read_ = std::move(h); }
  //! A read point now (the harness: when an operation returns, before its acknowledgement).
  void read_now() { read_point(); }
  //! Without a handler no lint runs (the nested simulator of a recovery).
  void set_lint_handler(LintHandler h) { on_lint_ = std::move(h); }
  //! Bytes of the range the UNTRACKED_STORE lint compares (at least the written extent);
  //! by default the whole range up to 8 MiB. The harness passes the pool's carved area.
  void set_compare_limit(std::function<std::size_t()> f) { compare_limit_fn_ = std::move(f); }

  //! The operation in progress returned: ack lints, then a crash point.
  void acknowledge();

  const Px86Model& model() const noexcept { return model_; }
  bool exploring() const noexcept { return exploring_; }
  std::byte* base() const noexcept { return base_; }

  void on_store(void* dst, const void* src, std::size_t len) override;
  void on_volatile_store(void* dst, const void* src, std::size_t len) override;
  void on_nt_store(void* dst, std::uint64_t value) override;
  void on_flush(const void* addr, std::size_t len) override;
  void on_fence() override;
  void on_commit(void* dst, std::size_t len, bool shares_fence) override;
  void on_alloc(void* p, std::size_t len) override;
  void on_free(void* p, std::size_t len) override;
  void on_assume_durable(void* p, std::size_t len) override;
  //! A single-threaded run lets its writes run solo (the path a lone thread of a real
  //! process takes) unless a read handler is set: the dirty-read probe looks up from another
  //! thread mid-write, which a solo write would make wait for it.
  bool allows_solo_writes() const noexcept override { return !on_read_; }

  //! Commit stores (pm::commit / pm::publish / pm::commit_sharing_fence) since the last
  //! acknowledgement (or since watch()).
  std::size_t commits_in_op() const noexcept { return op().commits; }
  //! Concurrent histories (run_concurrent_kv): the writer thread the next events come from.
  //! Its flush marks, fences, commit and after-commit bookkeeping and the acknowledgement
  //! lints are its own (Px86Model::set_thread). 0 throughout a single-threaded run.
  void set_thread(std::size_t t) noexcept { model_.set_thread(t); }
  std::size_t thread() const noexcept { return model_.thread(); }
  //! Testing the model only (Px86Model::set_global_fences).
  void set_global_fences(bool on) noexcept { model_.set_global_fences(on); }
  //! Concurrent histories: a writer's non-temporal stores not yet fenced are invisible to
  //! the other writers (a movnti reaches other cores through the memory controller, that is
  //! once durable), but trace mode stores them as plain stores. With tracking on, each
  //! writer's pending ones are kept (with the bytes they replaced) until its fence;
  //! hide_nt(t) puts the old bytes back in memory while another writer runs, show_nt(t)
  //! the new ones when t runs again.
  void set_track_nt(bool on) noexcept { track_nt_ = on; }
  void hide_nt(std::size_t t) noexcept;
  void show_nt(std::size_t t) noexcept;
  bool any_nt_hidden() const noexcept {
    for (bool h : nt_hidden_)
      if (h) return true;
    return false;
  }
  //! While on, the UNTRACKED_STORE comparison is skipped (a writer thread runs outside its
  //! turn: it may have changed a lock word it has not reported yet).
  void set_untracked_paused(bool on) noexcept { untracked_paused_ = on; }
  //! Off: fences and acknowledgements are not crash points (lints still run).
  void set_crash_points(bool on) noexcept { crash_points_ = on; }
  //! On: the events fed in are a recording replayed after the fact (memory already holds the
  //! end state): no UNTRACKED_STORE comparison, and allocated or freed blocks get their
  //! modelled bytes in the shadow and durable image only, not in memory.
  void set_replaying(bool on) noexcept { replaying_ = on; }

 private:
  bool offset_of(const void* p, std::size_t* off) const noexcept;
  void crash_point(bool at_ack);
  void read_point();
  void check_untracked();
  void lint(Lint l, std::size_t offset, std::uintptr_t site, const std::string& detail) {
    if (on_lint_) on_lint_(l, offset, site, detail);
  }

  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t compare_limit_ = 0;  // bytes compared against the shadow for UNTRACKED_STORE
  Px86Model model_;
  bool exploring_ = false;
  PointHandler on_point_;
  LintHandler on_lint_;
  ReadHandler on_read_;
  bool reading_ = false;
  //! Non-temporal stores since the last fence: (offset, the bytes they replaced).
  std::vector<std::pair<std::size_t, std::uint64_t>> pending_nt_;
  std::function<std::size_t()> compare_limit_fn_;
  bool crash_points_ = true;
  bool replaying_ = false;
  // per operation (reset by acknowledge), one set per writer thread (set_thread)
  struct OpState {
    std::size_t commits = 0;
    bool skip_commit_store = false;  // stores into [commit_off, commit_end) before the next
    std::size_t commit_off = 0, commit_end = 0;  // fence are the commit's own
    bool after_commit = false;
    std::vector<std::pair<std::size_t, std::size_t>> after_commit_stores;  // (offset, len)
  };
  std::array<OpState, kMaxThreads> op_state_;
  OpState& op() noexcept { return op_state_[model_.thread()]; }
  const OpState& op() const noexcept { return op_state_[model_.thread()]; }
  std::uint64_t junk_seq_ = 0;
  bool untracked_paused_ = false;
  struct PendingNt {
    std::size_t off;
    std::uint64_t old, now;
  };
  bool track_nt_ = false;
  std::array<std::vector<PendingNt>, kMaxThreads> nt_pending_;
  std::array<bool, kMaxThreads> nt_hidden_{};
};

//! Records the end of the highest store into a range (for reusing image buffers without
//! clearing them): the tracer installed while recovery runs on an image that is not watched
//! by a nested Simulator.
class ExtentTracker final : public pm::Tracer {
 public:
  void watch(std::byte* base, std::size_t size) noexcept {
    base_ = base;
    size_ = size;
    end_ = 0;
  }
  std::size_t end() const noexcept { return end_; }
  void on_store(void* dst, const void*, std::size_t len) override { note(dst, len); }
  void on_nt_store(void* dst, std::uint64_t) override { note(dst, 8); }
  void on_flush(const void*, std::size_t) override {}
  void on_fence() override {}

 private:
  void note(void* dst, std::size_t len) noexcept;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t end_ = 0;
};

//! Which images of a crash point to check. If the point has at most `cap` images, every
//! one; otherwise nothing-extra, everything, each dirty line alone fully applied, each pair
//! of lines (among at most `pair_lines` lines, chosen by the seed), and `random_samples`
//! seeded random choice vectors. Duplicates are skipped.
void select_images(std::span<const std::uint32_t> limits, std::size_t cap,
                   std::size_t random_samples, std::uint64_t seed,
                   FunctionRef<void(std::span<const std::uint32_t>)> fn,
                   std::size_t pair_lines = 32);

//! A 64-bit mix of a few numbers (seeds derived from (seed, point, choice)).
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept;

}  // namespace wort::crashsim
