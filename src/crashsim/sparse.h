// crashsim/sparse.h — buffers the size of a pool whose untouched pages cost nothing, and the
// one gap inside the range that every copy, compare and scan of the simulator skips.
//
// A pool made with PoolOptions::chunk_area_offset has a gap between its chunk table and its
// chunk area that nothing ever writes (pm/pool_layout.h): a test pool with a few MiB of
// chunks above 2^32 spans 4 GiB of offsets, of which a few MiB hold anything. The simulator's
// buffers (durable image and shadow of each model, the crash-image buffers) are anonymous
// MAP_NORESERVE mappings of the whole range, so the gap's pages are never made resident,
// and every loop over the range goes through for_each_outside, which leaves the gap out:
//
//   [0, gap.begin)  header, chunk table     copied, compared, scanned
//   [gap.begin, gap.end)                    never read or written (zero pages)
//   [gap.end, extent)  chunks in use        copied, compared, scanned
//
// Without a gap (begin == end) the loops are the single range they were.
#pragma once

#include <cstddef>
#include <utility>

namespace wort::crashsim {

//! The part [begin, end) of a watched range that nobody stores into (empty by default).
struct Gap {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool empty() const noexcept { return end <= begin; }
  bool operator==(const Gap&) const = default;
};

//! Calls fn(offset, length) for the pieces of [from, to) outside `gap`, ascending.
template <class Fn>
void for_each_outside(const Gap& gap, std::size_t from, std::size_t to, Fn&& fn) {
  if (to <= from) return;
  if (gap.empty() || to <= gap.begin || from >= gap.end) {
    fn(from, to - from);
    return;
  }
  if (from < gap.begin) fn(from, gap.begin - from);
  if (to > gap.end) fn(gap.end, to - gap.end);
}

//! A zeroed buffer of anonymous memory (MAP_NORESERVE), page-aligned: its pages become
//! resident only when written, so a buffer as large as a pool with a gap costs what is
//! stored in it.
class ZeroPages {
 public:
  ZeroPages() = default;
  //! Maps n zero bytes; throws std::bad_alloc if the mapping fails.
  explicit ZeroPages(std::size_t n);
  ~ZeroPages();
  ZeroPages(ZeroPages&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ZeroPages& operator=(ZeroPages&& o) noexcept;
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  //! Makes the whole pages inside [off, off+len) zero again and gives them back (a gap's
  //! pages: its bounds are multiples of 64, so a partial page at either end keeps what a
  //! bug may store there). Something stored into a gap by a bug must not outlive the image
  //! it was stored in.
  void discard(std::size_t off, std::size_t len) noexcept;

 private:
  std::byte* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace wort::crashsim
