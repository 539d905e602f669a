// server/zeroed_array.h — a fixed array of zeroed words whose pages become resident only when
// written: the store's per-granule side tables (CLOCK bits, recache tokens, access times).
//
// Sized by the pool, they are 14% of its size (access times one word per 32 bytes, the two
// bit maps one bit per 16 bytes). A std::vector of atomics wrote every element when it was
// built, so `wort serve -m 65536` took 9.4 GB of RSS before it served a request (session 20);
// calloc of a large block takes fresh zero pages from mmap and writes nothing. Elements are
// plain integers reached through std::atomic_ref (an atomic object would need constructing,
// which is the write this avoids).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace wort::server {

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
  std::size_t size() const noexcept { return size_; }

 private:
  struct Free {
    void operator()(T* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<T[], Free> words_;
  std::size_t size_ = 0;
};

}  // namespace wort::server
