// crashsim/sparse.cc — the anonymous MAP_NORESERVE buffers of crashsim/sparse.h.
#include "crashsim/sparse.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace wort::crashsim {

ZeroPages::ZeroPages(std::size_t n) : n_(n) {
  if (n == 0) return;
  void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  p_ = static_cast<std::byte*>(m);
}

ZeroPages::~ZeroPages() {
  if (p_) ::munmap(p_, n_);
}

ZeroPages& ZeroPages::operator=(ZeroPages&& o) noexcept {
  if (this != &o) {
    if (p_) ::munmap(p_, n_);
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
  }
  return *this;
}

void ZeroPages::discard(std::size_t off, std::size_t len) noexcept {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t from = (off + page - 1) / page * page;
  const std::size_t to = std::min(off + len, n_) / page * page;
  if (p_ && to > from) ::madvise(p_ + from, to - from, MADV_DONTNEED);  // private: zero again
}

}  // namespace wort::crashsim
