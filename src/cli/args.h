// cli/args.h — a small command-line reader: "--name value", "--name=value" and flags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"

namespace wort::cli {

class ArgReader {
 public:
  explicit ArgReader(const Args& a) : args_(a) {}
  //! True while arguments remain.
  bool more() const { return i_ < args_.size(); }
  //! If the next argument is `--name` or `--name=...`, consumes the name and returns true.
  bool is(std::string_view name);
  //! The value of the option just matched (inline "=value" or the next argument).
  std::string value();
  //! The next argument, for error messages.
  const std::string& peek() const { return args_[i_]; }
  //! True if the next argument is a positional one (does not start with '-').
  bool positional() const { return more() && (args_[i_].empty() || args_[i_][0] != '-'); }
  //! Consumes and returns the next argument.
  std::string take() { return args_[i_++]; }

 private:
  const Args& args_;
  std::size_t i_ = 0;
  std::string inline_value_;
  bool has_inline_ = false;
  std::string current_;
};

//! "1000", "100k", "1M", "2G" (decimal multipliers); throws UsageError.
std::uint64_t parse_count(const std::string& s, const std::string& what);
//! Bytes: "4096", "64K", "1M", "2G" (binary multipliers); throws UsageError.
std::uint64_t parse_bytes(const std::string& s, const std::string& what);
//! A non-negative decimal number; throws UsageError.
double parse_number(const std::string& s, const std::string& what);
//! Splits "a,b,c" (empty items dropped).
std::vector<std::string> split_list(const std::string& s);

}  // namespace wort::cli
