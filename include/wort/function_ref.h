// wort/function_ref.h — a non-owning, non-allocating callable reference (like
// std::function_ref of C++26). Used for visitors on scan paths, where std::function's
// allocation and copy would show in the numbers.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace wort {

template <class Sig>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F,
            class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                     std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT: implicit on purpose
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace wort
