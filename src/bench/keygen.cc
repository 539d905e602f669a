#include "bench/keygen.h"

#include <algorithm>
#include <fstream>
#include <unordered_set>

#include "bench/rng.h"

namespace wort::bench {
namespace {

constexpr std::size_t kClusterSize = 64;  // the WORT paper's Clustered group length

std::vector<std::uint64_t> dense_keys(std::size_t n) {
  std::vector<std::uint64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i + 1;
  return v;
}

std::vector<std::uint64_t> sparse_keys(std::size_t n, Rng& rng) {
  std::vector<std::uint64_t> v;
  v.reserve(n);
  std::unordered_set<std::uint64_t> seen;
  seen.reserve(n * 2);
  while (v.size() < n) {
    const std::uint64_t k = rng.next();
    if (seen.insert(k).second) v.push_back(k);
  }
  return v;
}

// Groups of 64 consecutive keys; each group's base is random and groups never overlap
// (a base is drawn on a 64-aligned grid, so two groups are either equal or disjoint).
std::vector<std::uint64_t> clustered_keys(std::size_t n, Rng& rng) {
  std::vector<std::uint64_t> v;
  v.reserve(n);
  std::unordered_set<std::uint64_t> bases;
  while (v.size() < n) {
    const std::uint64_t base = rng.next() & ~std::uint64_t{kClusterSize - 1};
    if (!bases.insert(base).second) continue;
    for (std::size_t i = 0; i < kClusterSize && v.size() < n; ++i) v.push_back(base + i);
  }
  return v;
}

void random_bytes(std::string& s, std::size_t len, Rng& rng) {
  s.resize(len);
  for (std::size_t i = 0; i < len; i += 8) {
    std::uint64_t r = rng.next();
    for (std::size_t j = i; j < len && j < i + 8; ++j, r >>= 8) s[j] = static_cast<char>(r);
  }
}

template <class Make>
KeySet distinct_strings(std::size_t n, Make make) {
  KeySet ks;
  std::unordered_set<std::string> seen;
  seen.reserve(n * 2);
  std::string s;
  while (ks.size() < n) {
    make(s);
    if (seen.insert(s).second) ks.push(s);
  }
  ks.source = "generated";
  return ks;
}

constexpr const char* kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ber",
                                      "dan", "fel", "gor", "hin", "jus", "mar", "pet", "son",
                                      "wil", "an", "el"};
constexpr const char* kDomains[] = {"example.com", "mail.org", "post.net", "inbox.io",
                                    "uni.edu",     "corp.de",  "web.fr",   "box.co.uk"};

std::string syllable_word(Rng& rng, std::size_t min, std::size_t max) {
  std::string w;
  const std::size_t count = min + rng.below(max - min + 1);
  for (std::size_t i = 0; i < count; ++i) w += kSyllables[rng.below(std::size(kSyllables))];
  return w;
}

void email_key(std::string& s, Rng& rng) {
  s = syllable_word(rng, 1, 3);
  s += '.';
  s += syllable_word(rng, 1, 4);
  s += std::to_string(rng.below(1000));
  s += '@';
  s += kDomains[rng.below(std::size(kDomains))];
}

KeySet word_keys(const KeySpec& spec, Rng& rng) {
  std::ifstream in(spec.words_file);
  if (!in) {
    KeySet ks = distinct_strings(spec.n, [&](std::string& s) { email_key(s, rng); });
    ks.source = "generated email-like keys (" + spec.words_file + " not readable)";
    return ks;
  }
  std::vector<std::string> lines;
  std::unordered_set<std::string> seen;
  std::size_t total = 0;
  for (std::string line; std::getline(in, line);) {
    ++total;
    if (!line.empty() && seen.insert(line).second) lines.push_back(std::move(line));
  }
  shuffle(lines, rng);
  if (lines.size() > spec.n) lines.resize(spec.n);
  KeySet ks;
  for (const auto& l : lines) ks.push(l);
  ks.source = spec.words_file + " (" + std::to_string(seen.size()) + " distinct of " +
              std::to_string(total) + " lines)";
  return ks;
}

}  // namespace

std::string_view to_string(KeyDist d) noexcept {
  switch (d) {
    case KeyDist::dense: return "dense";
    case KeyDist::sparse: return "sparse";
    case KeyDist::clustered: return "clustered";
    case KeyDist::varbytes: return "varbytes";
    case KeyDist::words: return "words";
    case KeyDist::email: return "email";
    case KeyDist::fixed20: return "fixed20";
  }
  return "?";
}

bool parse(std::string_view s, KeyDist& out) noexcept {
  for (auto d : {KeyDist::dense, KeyDist::sparse, KeyDist::clustered, KeyDist::varbytes,
                 KeyDist::words, KeyDist::email, KeyDist::fixed20}) {
    if (s == to_string(d)) {
      out = d;
      return true;
    }
  }
  return false;
}

bool is_integer(KeyDist d) noexcept {
  return d == KeyDist::dense || d == KeyDist::sparse || d == KeyDist::clustered;
}

void KeySet::push(std::string_view k) {
  bytes_.append(k);
  offsets_.push_back(bytes_.size());
}

void KeySet::reserve(std::size_t n, std::size_t bytes) {
  offsets_.reserve(n + 1);
  bytes_.reserve(bytes);
}

std::vector<std::uint64_t> integer_keys(KeyDist d, std::size_t n, std::uint64_t seed) {
  Rng rng(Rng::derive(seed, 1));
  std::vector<std::uint64_t> v;
  switch (d) {
    case KeyDist::dense: v = dense_keys(n); break;
    case KeyDist::sparse: v = sparse_keys(n, rng); break;
    case KeyDist::clustered: v = clustered_keys(n, rng); break;
    default: return v;
  }
  shuffle(v, rng);
  return v;
}

Result<KeySet> make_key_set(const KeySpec& spec) {
  Rng rng(Rng::derive(spec.seed, 2));
  if (is_integer(spec.dist)) {
    KeySet ks;
    ks.reserve(spec.n, spec.n * 8);
    for (std::uint64_t k : integer_keys(spec.dist, spec.n, spec.seed)) {
      const auto b = u64_key(k);
      ks.push({reinterpret_cast<const char*>(b.data()), b.size()});
    }
    ks.source = "generated";
    return ks;
  }
  switch (spec.dist) {
    case KeyDist::varbytes: {
      if (spec.min_len == 0 || spec.min_len > spec.max_len || spec.max_len > kMaxKeyLength)
        return Error{Status::invalid_argument, "key length range must be 1 <= min <= max <= " +
                                                   std::to_string(kMaxKeyLength)};
      // Short keys cap how many distinct keys exist; refuse what cannot be generated.
      if (spec.max_len < 8 && spec.n > (std::size_t{1} << (8 * spec.max_len)) / 2)
        return Error{Status::invalid_argument, "too many keys for the key length range"};
      return distinct_strings(spec.n, [&](std::string& s) {
        random_bytes(s, spec.min_len + rng.below(spec.max_len - spec.min_len + 1), rng);
      });
    }
    case KeyDist::fixed20:
      return distinct_strings(spec.n, [&](std::string& s) { random_bytes(s, 20, rng); });
    case KeyDist::email:
      return distinct_strings(spec.n, [&](std::string& s) { email_key(s, rng); });
    case KeyDist::words: return word_keys(spec, rng);
    default: break;
  }
  return Error{Status::invalid_argument, "unknown key distribution"};
}

}  // namespace wort::bench
