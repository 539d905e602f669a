// crashsim/replay.cc — parsing and printing replay strings and choice vectors.
#include "crashsim/replay.h"

#include <charconv>
#include <sstream>

#include "crashsim/simulator.h"

namespace wort::crashsim {
namespace {

bool parse_u64(const std::string& s, std::uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

bool parse_replay(const std::string& s, ReplaySpec* out, std::string* err) {
  ReplaySpec r;
  r.active = true;
  bool have_point = false, have_choice = false;
  std::stringstream ss(s);
  std::string field;
  while (std::getline(ss, field, ',')) {
    const auto eq = field.find('=');
    if (eq == std::string::npos) {
      *err = "field '" + field + "' has no '='";
      return false;
    }
    const std::string key = field.substr(0, eq), val = field.substr(eq + 1);
    std::uint64_t n = 0;
    if (key == "choice") {
      r.choice = val;
      have_choice = true;
    } else if (key == "rchoice") {
      r.rchoice = val;
    } else if (key == "stalls") {  // concurrent histories: events after which a writer stalled
      r.concurrent = true;
      if (val != "-") {
        std::stringstream vs(val);
        std::string item;
        while (std::getline(vs, item, '/')) {  // event.writer
          const auto dot = item.find('.');
          std::uint64_t w = 0;
          if (dot == std::string::npos || !parse_u64(item.substr(0, dot), &n) ||
              !parse_u64(item.substr(dot + 1), &w) || w >= 16) {
            *err = "stalls: '" + item + "' is not event.writer";
            return false;
          }
          r.stalls.push_back(n * 16 + w);
        }
      }
    } else if (key == "ops") {  // informational (concurrent histories): each thread's op
    } else if (key == "seed" || key == "point" || key == "rpoint" || key == "op") {
      if (!parse_u64(val, &n)) {
        *err = "field '" + key + "' is not a number";
        return false;
      }
      if (key == "seed") r.seed = n;
      if (key == "point") r.point = n, have_point = true;
      if (key == "rpoint") r.rpoint = n, r.nested = true;
    } else {
      *err = "unknown field '" + key + "'";
      return false;
    }
  }
  if (!have_point || !have_choice) {
    *err = "needs point= and choice=";
    return false;
  }
  if (r.nested && r.rchoice.empty()) {
    *err = "rpoint= needs rchoice=";
    return false;
  }
  *out = r;
  return true;
}

bool resolve_choice(const std::string& text, std::span<const std::uint32_t> limits,
                    std::vector<std::uint32_t>* out) {
  out->clear();
  if (text == "none") {
    out->assign(limits.size(), 0);
    return true;
  }
  if (text == "all") {
    out->assign(limits.begin(), limits.end());
    return true;
  }
  if (text != "-") {
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, '.')) {
      std::uint64_t v = 0;
      if (!parse_u64(part, &v)) return false;
      out->push_back(static_cast<std::uint32_t>(v));
    }
  }
  if (out->size() != limits.size()) return false;
  for (std::size_t i = 0; i < limits.size(); ++i)
    if ((*out)[i] > limits[i]) return false;
  return true;
}

std::string format_choice(std::span<const std::uint32_t> choice) {
  if (choice.empty()) return "-";
  std::string s;
  for (std::size_t i = 0; i < choice.size(); ++i) {
    if (i) s += '.';
    s += std::to_string(choice[i]);
  }
  return s;
}

std::uint64_t hash_choice(std::span<const std::uint32_t> choice) noexcept {
  std::uint64_t h = choice.size();
  for (std::uint32_t c : choice) h = mix_seed(h, c);
  return h;
}

}  // namespace wort::crashsim
