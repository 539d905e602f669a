#include "cli/args.h"

#include <cerrno>
#include <cstdlib>

namespace wort::cli {

bool ArgReader::is(std::string_view name) {
  if (i_ >= args_.size()) return false;
  const std::string& a = args_[i_];
  if (a == name) {
    has_inline_ = false;
  } else if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
    has_inline_ = true;
    inline_value_ = a.substr(name.size() + 1);
  } else {
    return false;
  }
  current_ = std::string(name);
  ++i_;
  return true;
}

std::string ArgReader::value() {
  if (has_inline_) {
    has_inline_ = false;
    return inline_value_;
  }
  if (i_ >= args_.size()) throw UsageError("option " + current_ + " needs a value");
  return args_[i_++];
}

std::uint64_t parse_count(const std::string& s, const std::string& what) {
  if (s.empty()) throw UsageError(what + ": empty value");
  // Plain integers exactly (a seed may exceed a double's 53 bits); suffixed counts via double.
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
    if (errno == ERANGE) throw UsageError(what + ": too large: '" + s + "'");
    return v;
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  double mult = 1;
  const std::string suffix(end);
  if (suffix == "k" || suffix == "K") mult = 1e3;
  else if (suffix == "m" || suffix == "M") mult = 1e6;
  else if (suffix == "g" || suffix == "G") mult = 1e9;
  else if (!suffix.empty()) throw UsageError(what + ": not a count: '" + s + "'");
  if (end == s.c_str() || v < 0) throw UsageError(what + ": not a count: '" + s + "'");
  return static_cast<std::uint64_t>(v * mult + 0.5);
}

std::uint64_t parse_bytes(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string suffix(end);
  double mult = 1;
  if (suffix == "k" || suffix == "K" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "m" || suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw UsageError(what + ": not a size: '" + s + "'");
  if (s.empty() || end == s.c_str() || v < 0) throw UsageError(what + ": not a size: '" + s + "'");
  return static_cast<std::uint64_t>(v * mult + 0.5);
}

double parse_number(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || v < 0) throw UsageError(what + ": not a number: '" + s + "'");
  return v;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b <= s.size()) {
    std::size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

}  // namespace wort::cli
