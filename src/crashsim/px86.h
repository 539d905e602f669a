// crashsim/px86.h — the Px86 persistency model of one watched memory range.
//
// For each 64-byte line the model keeps the ordered log of stores made since the line was
// last durable, and a flush mark into that log:
//
//   line 0x1c0:  durable bytes  +  log [ s0 s1 | s2 ]        mark = 2 (after s1)
//                                          ^ flush happened here
//
//   store     appends to the line's log (a store spanning lines becomes one entry per line)
//   flush     sets the mark of each covered line at the current end of its log
//   nt-store  a store followed by a flush of its line (written back without a flush)
//   fence     applies every line's log up to its mark to the durable image and drops it
//   crash     leaves each line at ANY prefix of its log (the durable point is the empty
//             prefix, since fences fold durable entries into the image), lines
//             independently: a choice vector holds one prefix length per dirty line.
//
// A store of at most 8 bytes (pm::store) is one entry: it survives whole or not at all. A
// bulk pm::copy / pm::fill becomes one entry per line piece — bulk writes are only for
// memory nobody can reach yet, so their tearing inside a line is not modelled.
//
// The model also keeps a shadow of what the range should contain (every store applied), so
// a caller can find bytes that changed without passing through the model.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "crashsim/sparse.h"

namespace wort::crashsim {

inline constexpr std::size_t kLine = 64;
//! Writer threads a model tells apart (crashsim::run_concurrent_kv); a single-threaded run
//! is thread 0 throughout.
inline constexpr std::size_t kMaxThreads = 4;

class Px86Model {
 public:
  //! One store inside one line.
  struct Entry {
    std::uint8_t offset = 0;  //!< byte offset inside the line
    std::uint8_t len = 0;     //!< 1..64
    bool needs_flush = true;  //!< false: pm::store_volatile (rebuilt after a restart)
    std::uint8_t thread = 0;  //!< the thread that made the store
    std::array<std::byte, kLine> bytes{};
  };
  //! A line's stores since it was last durable. Each thread has its own flush mark:
  //! entries [0, marks[t]) were covered by a write-back thread t issued, which only a fence
  //! of thread t orders (an sfence waits for its own thread's write-backs, nobody else's).
  struct LineLog {
    std::vector<Entry> entries;
    std::array<std::uint32_t, kMaxThreads> marks{};
    //! The current thread's mark (see set_thread).
    std::uint32_t mark_of(std::size_t t) const noexcept { return marks[t]; }
    //! Highest mark of any thread.
    std::uint32_t max_mark() const noexcept;
  };
  //! What a flush found, for the REDUNDANT_FLUSH lint.
  struct FlushResult {
    std::size_t lines = 0;            //!< lines the flush covers
    std::size_t redundant_lines = 0;  //!< covered lines with no store since their mark
    std::size_t first_redundant = 0;  //!< offset of the first such line
  };

  //! Starts over on a range of `size` bytes whose contents are `init[0, extent)` followed by
  //! zeros; everything is durable. Buffers are reused across resets. The bytes of `gap`
  //! (crashsim/sparse.h) are zero and stay out of every copy: nothing stores there.
  void reset(const std::byte* init, std::size_t size, std::size_t extent, Gap gap = {});

  //! The thread the following events belong to (0 in a single-threaded run). Stores carry
  //! it; a flush sets this thread's mark; a fence folds this thread's marks only; the lint
  //! queries (first_unflushed, first_unfenced, ...) look at this thread's stores and marks.
  void set_thread(std::size_t t) noexcept { thread_ = t; }
  std::size_t thread() const noexcept { return thread_; }
  //! Testing the model only: a fence of any thread folds every thread's marks (the unsound
  //! "one global fence" model, which lets one thread's sfence order another's write-back).
  void set_global_fences(bool on) noexcept { global_fences_ = on; }

  //! Records a store of `len` bytes from `src` at range offset `off`. `needs_flush` false
  //! marks a pm::store_volatile: it is in the log like any store (a crash may keep it or
  //! not), but MISSING_FLUSH does not count it.
  void store(std::size_t off, const void* src, std::size_t len, bool needs_flush = true);
  //! Records a non-temporal 8-byte store (store + flush of its line).
  void nt_store(std::size_t off, std::uint64_t value);
  //! Records a write-back of the lines overlapping [off, off+len).
  FlushResult flush(std::size_t off, std::size_t len);
  //! Records a fence of the current thread: each line's log up to this thread's mark becomes
  //! durable; other threads' marks shrink by what was folded. Returns false if it had
  //! nothing to order (no line had a mark of this thread).
  bool fence();

  //! Lines with a non-empty log, ascending.
  std::size_t dirty_lines() const noexcept { return lines_.size(); }
  //! Per dirty line (ascending), the number of log entries: choices run 0..limit.
  std::vector<std::uint32_t> choice_limits() const;
  //! Number of distinct crash images: product of (limit + 1), saturating at UINT64_MAX.
  std::uint64_t image_count() const noexcept;
  //! Writes the crash image named by `choice` (one prefix length per dirty line) into
  //! `out[0, n)` except the gap (left as it is: zero); n must be at least extent(). Returns
  //! false if `choice` does not fit.
  bool build_image(std::span<const std::uint32_t> choice, std::byte* out, std::size_t n) const;

  //! Offset of the first line holding a store of the current thread (not a volatile one)
  //! after this thread's mark, or SIZE_MAX.
  std::size_t first_unflushed() const noexcept;
  //! True if the line at `line` (a line offset) holds a store not yet flushed.
  bool line_unflushed(std::size_t line) const noexcept;
  //! Offset of the first line with a flush mark of the current thread not yet fenced, or SIZE_MAX.
  std::size_t first_unfenced() const noexcept;
  //! Number of lines with stores after their mark / with an unfenced mark.
  std::size_t unflushed_lines() const noexcept;
  std::size_t unfenced_lines() const noexcept;

  //! Bytes [0, extent) hold everything ever written; beyond is zero in every buffer.
  std::size_t extent() const noexcept { return extent_; }
  std::size_t size() const noexcept { return size_; }
  const Gap& gap() const noexcept { return gap_; }
  const std::byte* shadow() const noexcept { return shadow_.data(); }
  const std::byte* durable() const noexcept { return durable_.data(); }
  const std::map<std::size_t, LineLog>& lines() const noexcept { return lines_; }

  //! Bytes found changed behind the model's back: taken into the shadow and the durable
  //! image as they are (the finding is reported by the caller, not replayed as a crash).
  void absorb(std::size_t off, const std::byte* bytes, std::size_t len);

 private:
  void store_in_line(std::size_t line, std::size_t in_line, const std::byte* src,
                     std::size_t len);
  static void apply(const LineLog& log, std::size_t count, std::byte* line_base);

  std::size_t size_ = 0;
  std::size_t extent_ = 0;
  Gap gap_;
  ZeroPages durable_;  // MAP_NORESERVE: the gap's pages are never touched
  ZeroPages shadow_;
  std::map<std::size_t, LineLog> lines_;  // line offset -> log (only non-empty logs)
  std::size_t thread_ = 0;
  bool global_fences_ = false;
};

}  // namespace wort::crashsim
