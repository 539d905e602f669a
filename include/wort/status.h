// wort/status.h — the small error vocabulary every layer returns.
//
// Hot paths return a bare `Status`; "not_found" and "exists" are normal outcomes.
// Cold paths (opening a pool, recovery, verify) return `Result<T>`, which carries a
// message naming the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace wort {

//! Outcome codes. Each pool-open failure has its own code so callers can tell them apart.
enum class [[nodiscard]] Status : std::uint8_t {
  ok,
  not_found,         //!< key absent (a normal outcome)
  exists,            //!< key already present on insert (a normal outcome)
  out_of_space,      //!< the pool cannot satisfy an allocation; the structure is unchanged
  corrupt,           //!< a structural check failed (header checksum, verify(), recovery)
  invalid_argument,  //!< caller error: bad size, bad key, bad option
  io_error,          //!< the OS refused (open, mmap, ftruncate, ...)
  no_such_file,      //!< pool file does not exist
  truncated,         //!< pool file shorter than its header says (or than a header)
  not_a_pool,        //!< wrong magic: some other file
  newer_version,     //!< written by a newer layout version than this build reads
  wrong_kind,        //!< pool holds a different index kind than the caller asked for
  in_use,            //!< pool is open elsewhere (another process, or another Pool here)
};

//! Stable lower-case name of a status ("out_of_space").
std::string_view to_string(Status s) noexcept;

//! A failed outcome with a human-readable message naming the problem.
struct Error {
  Status code = Status::ok;
  std::string message;
};

//! Value-or-error for cold paths. `Result<void>` is a plain success-or-Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                      // NOLINT: implicit on purpose
  Result(Error e) : v_(std::move(e)) {}                          // NOLINT
  Result(Status code, std::string msg) : v_(Error{code, std::move(msg)}) {}
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const noexcept { return ok() ? Status::ok : std::get<1>(v_).code; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : e_(std::move(e)) {}  // NOLINT
  Result(Status code, std::string msg) : e_{code, std::move(msg)} {}
  bool ok() const noexcept { return e_.code == Status::ok; }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const { return e_; }
  Status status() const noexcept { return e_.code; }

 private:
  Error e_;
};

}  // namespace wort
