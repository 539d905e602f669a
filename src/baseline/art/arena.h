// baseline/art/arena.h — where the volatile ART's nodes and leaves come from.
//
// One arena per tree. Blocks are rounded up to 16 bytes and grouped in size classes; each
// class carves its blocks from its own slabs (so a block of a class whose size is a
// multiple of 64, such as a Node4, never straddles a cache line) and keeps freed blocks on
// an intrusive free list (the first word of a free block links to the next):
//
//   class c (size 16 * (c + 1)):   free list -> block -> block -> null
//                                  slab: [blk][blk][blk][ ... carved ... | bump -> end ]
//
// allocate() pops the free list, else bumps; release() pushes. Both are a few instructions
// inline, against ~50-100 for operator new/delete. Blocks above kMaxSmall come from
// operator new one by one. The arena frees all its slabs when the tree is destroyed; it
// never hands memory back before that (a freed block waits for the next of its class).
// Single-threaded, like the tree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace wort::art {

class Arena {
 public:
  static constexpr std::size_t kGrain = 16;       //!< block sizes are multiples of this
  static constexpr std::size_t kMaxSmall = 2112;  //!< a Node256's block (33 lines); larger: operator new
  static constexpr std::size_t kClasses = kMaxSmall / kGrain;

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  //! A block of at least `bytes` bytes, 16-aligned (64-aligned when its rounded size is a
  //! multiple of 64). Throws std::bad_alloc.
  void* allocate(std::size_t bytes) {
    if (bytes > kMaxSmall) [[unlikely]] return ::operator new(bytes);
    Class& c = classes_[class_of(bytes)];
    if (c.free != nullptr) {
      FreeBlock* b = c.free;
      c.free = b->next;
      return b;
    }
    if (c.bump != c.end) [[likely]] {
      void* p = c.bump;
      c.bump += size_of(class_of(bytes));
      return p;
    }
    return carve(class_of(bytes));
  }

  //! Gives back a block of `bytes` bytes from allocate().
  void release(void* p, std::size_t bytes) noexcept {
    if (bytes > kMaxSmall) [[unlikely]] {
      ::operator delete(p);
      return;
    }
    Class& c = classes_[class_of(bytes)];
    auto* b = static_cast<FreeBlock*>(p);
    b->next = c.free;
    c.free = b;
  }

  //! The bytes a block of `bytes` really occupies.
  static std::size_t rounded(std::size_t bytes) noexcept {
    return bytes > kMaxSmall ? bytes : size_of(class_of(bytes));
  }
  //! Bytes of slabs obtained from the system.
  std::size_t slab_bytes() const noexcept { return slab_bytes_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  struct Class {
    FreeBlock* free = nullptr;
    std::byte* bump = nullptr;
    std::byte* end = nullptr;
  };
  static std::size_t class_of(std::size_t bytes) noexcept {
    return bytes == 0 ? 0 : (bytes - 1) / kGrain;
  }
  static std::size_t size_of(std::size_t cls) noexcept { return (cls + 1) * kGrain; }
  //! A new slab for class `cls`, and its first block.
  void* carve(std::size_t cls);

  std::array<Class, kClasses> classes_{};
  std::vector<std::byte*> slabs_;
  std::size_t slab_bytes_ = 0;
};

}  // namespace wort::art
