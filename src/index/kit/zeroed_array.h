// index/kit/zeroed_array.h — a fixed array of zeroed words whose pages become resident
// only when written: DRAM tables sized by the pool, of which a run touches a part.
//
// calloc of a large block takes fresh zero pages from mmap and writes nothing, where a
// std::vector writes every element when it is built. Users: the checked walk's
// reached-bitmap (the chunk area / 128 bytes; a 64 GiB pool's open took 535 MB of RSS for its
// 512 MiB bitmap) and the server's per-granule side tables (CLOCK bits, recache tokens,
// access times: up to 14% of the pool; `wort serve -m 65536` took 9.4 GB of RSS before it
// served a request with them). Shared tables reach their elements through std::atomic_ref
// (operator[]: an atomic object would need constructing, which is the write this avoids);
// a single-threaded user reads and writes data() directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace wort::kit {

template <class T>
class ZeroedArray {
  static_assert(std::is_integral_v<T>);

 public:
  ZeroedArray() = default;
  explicit ZeroedArray(std::size_t n)
      : words_(static_cast<T*>(std::calloc(n, sizeof(T)))), size_(n) {
    if (words_ == nullptr && n != 0) throw std::bad_alloc();
  }

  std::atomic_ref<T> operator[](std::size_t i) const noexcept { return std::atomic_ref<T>(words_[i]); }
  T* data() const noexcept { return words_.get(); }
  std::size_t size() const noexcept { return size_; }

 private:
  struct Free {
    void operator()(T* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<T[], Free> words_;
  std::size_t size_ = 0;
};

}  // namespace wort::kit
