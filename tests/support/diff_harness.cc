#include "support/diff_harness.h"

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "pm/allocator.h"

namespace wort::test {
namespace {
std::string printable(const std::string& k) {
  std::string out;
  for (unsigned char c : k) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return "\"" + out + "\"";
}
}  // namespace

DiffChecker::DiffChecker(const crashsim::Factory& factory, std::uint64_t pool_size,
                         std::uint32_t chunk_size)
    : factory_(factory) {
  PoolOptions o;
  o.size = pool_size;
  o.chunk_size = chunk_size;
  o.kind = factory.kind;
  auto p = Pool::create_in_memory(o);
  if (!p) throw std::runtime_error("create_in_memory: " + p.error().message);
  pool_ = std::move(p).value();
  auto ix = factory_.create(*pool_);
  if (!ix) throw std::runtime_error("create index: " + ix.error().message);
  index_ = std::move(ix).value();
}

void DiffChecker::insert(const std::string& k, Value v) {
  Status want = ref_.emplace(k, v).second ? Status::ok : Status::exists;
  EXPECT_EQ(index_->insert(as_key(k), v), want) << "insert " << printable(k);
}

void DiffChecker::upsert(const std::string& k, Value v) {
  ref_[k] = v;
  EXPECT_EQ(index_->upsert(as_key(k), v), Status::ok) << "upsert " << printable(k);
}

void DiffChecker::update(const std::string& k, Value v) {
  auto it = ref_.find(k);
  Status want = it == ref_.end() ? Status::not_found : Status::ok;
  if (it != ref_.end()) it->second = v;
  EXPECT_EQ(index_->update(as_key(k), v), want) << "update " << printable(k);
}

void DiffChecker::remove(const std::string& k) {
  Status want = ref_.erase(k) ? Status::ok : Status::not_found;
  EXPECT_EQ(index_->remove(as_key(k)), want) << "remove " << printable(k);
}

void DiffChecker::lookup(const std::string& k) {
  auto it = ref_.find(k);
  auto got = index_->lookup(as_key(k));
  if (it == ref_.end()) {
    EXPECT_FALSE(got.has_value()) << "lookup of absent " << printable(k);
  } else {
    EXPECT_EQ(got, std::optional<Value>(it->second)) << "lookup " << printable(k);
  }
}

bool DiffChecker::check(std::uint64_t seed, std::size_t probes) {
  int failures = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 5) ADD_FAILURE() << what;
  };
  for (const auto& [k, v] : ref_) {
    auto got = index_->lookup(as_key(k));
    if (got != std::optional<Value>(v)) fail("lookup " + printable(k) + " wrong");
  }
  // full scan from the empty key
  std::vector<std::pair<std::string, Value>> seen;
  index_->scan(Key{}, ref_.size() + 10, [&](Key k, Value v) {
    seen.emplace_back(std::string(as_string(k)), v);
    return true;
  });
  if (seen.size() != ref_.size()) {
    fail("full scan returned " + std::to_string(seen.size()) + " keys, want " +
         std::to_string(ref_.size()));
  } else {
    std::size_t i = 0;
    for (const auto& [k, v] : ref_) {
      if (seen[i].first != k || seen[i].second != v) {
        fail("full scan position " + std::to_string(i) + ": got " + printable(seen[i].first) +
             " want " + printable(k));
        break;
      }
      ++i;
    }
  }
  // scans and ranges from random probe points (existing keys and perturbed ones)
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys;
  keys.reserve(ref_.size());
  for (const auto& kv : ref_) keys.push_back(kv.first);
  for (std::size_t p = 0; p < probes && !keys.empty(); ++p) {
    std::string from = keys[rng() % keys.size()];
    if (rng() % 2) from.push_back(static_cast<char>(rng() % 256));
    else if (!from.empty() && rng() % 2) from.back() = static_cast<char>(from.back() + 1);
    std::size_t n = 1 + rng() % 50;
    std::vector<std::string> got;
    index_->scan(as_key(from), n, [&](Key k, Value) {
      got.emplace_back(as_string(k));
      return true;
    });
    std::vector<std::string> want;
    for (auto it = ref_.lower_bound(from); it != ref_.end() && want.size() < n; ++it)
      want.push_back(it->first);
    if (got != want) fail("scan(" + printable(from) + ", " + std::to_string(n) + ") differs");
    std::string hi = keys[rng() % keys.size()];
    if (hi < from) std::swap(hi, from);
    got.clear();
    index_->range(as_key(from), as_key(hi), [&](Key k, Value) {
      got.emplace_back(as_string(k));
      return true;
    });
    want.clear();
    for (auto it = ref_.lower_bound(from); it != ref_.end() && it->first < hi; ++it)
      want.push_back(it->first);
    if (got != want)
      fail("range(" + printable(from) + ", " + printable(hi) + ") returned " +
           std::to_string(got.size()) + " keys, want " + std::to_string(want.size()));
  }
  if (auto v = index_->verify(); !v) fail("verify: " + v.error().message);
  auto audit = pool_->allocator().audit([&](pm::BlockVisitor bv) { return index_->visit_blocks(bv); });
  if (!audit.ok()) fail("allocator audit: " + audit.describe());
  if (index_->stats().keys != ref_.size())
    fail("stats().keys = " + std::to_string(index_->stats().keys) + ", want " +
         std::to_string(ref_.size()));
  return failures == 0;
}

void DiffChecker::FreeAligned::operator()(std::byte* p) const { std::free(p); }

void DiffChecker::reopen() {
  index_.reset();
  const std::uint64_t size = pool_->size();
  std::unique_ptr<std::byte, FreeAligned> copy(
      static_cast<std::byte*>(std::aligned_alloc(4096, size)));
  std::memcpy(copy.get(), pool_->base(), size);
  pool_.reset();
  image_ = std::move(copy);
  auto p = Pool::attach({image_.get(), size}, factory_.kind);
  ASSERT_TRUE(p.ok()) << "reopen pool: " << p.error().message;
  pool_ = std::move(p).value();
  auto ix = factory_.open(*pool_);
  ASSERT_TRUE(ix.ok()) << "reopen: " << ix.error().message;
  index_ = std::move(ix).value();
}

}  // namespace wort::test
