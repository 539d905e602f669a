// crashsim/px86.cc — the per-line store logs, marks and durable image of the Px86 model.
#include "crashsim/px86.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace wort::crashsim {

void Px86Model::reset(const std::byte* init, std::size_t size, std::size_t extent, Gap gap) {
  extent = std::min(extent, size);
  // Bytes past max(old extent, new extent) are already zero in reused buffers.
  const std::size_t copy = std::min(size, std::max(extent, extent_));
  if (durable_.size() != size || gap != gap_) {
    durable_ = ZeroPages(size);
    shadow_ = ZeroPages(size);
  } else {
    for_each_outside(gap, extent, copy, [&](std::size_t off, std::size_t n) {
      std::memset(durable_.data() + off, 0, n);
      std::memset(shadow_.data() + off, 0, n);
    });
    // A bug's store into the gap must not outlive this run.
    if (!gap.empty()) {
      durable_.discard(gap.begin, gap.end - gap.begin);
      shadow_.discard(gap.begin, gap.end - gap.begin);
    }
  }
  for_each_outside(gap, 0, extent, [&](std::size_t off, std::size_t n) {
    std::memcpy(durable_.data() + off, init + off, n);
    std::memcpy(shadow_.data() + off, init + off, n);
  });
  gap_ = gap;
  size_ = size;
  extent_ = extent;
  lines_.clear();
}

void Px86Model::store(std::size_t off, const void* src, std::size_t len, bool needs_flush) {
  if (len == 0 || off >= size_) return;
  len = std::min(len, size_ - off);
  const auto* bytes = static_cast<const std::byte*>(src);
  std::memcpy(shadow_.data() + off, bytes, len);
  extent_ = std::max(extent_, off + len);
  while (len > 0) {
    const std::size_t line = off & ~(kLine - 1);
    const std::size_t in_line = off - line;
    const std::size_t piece = std::min(len, kLine - in_line);
    store_in_line(line, in_line, bytes, piece);
    Entry& e = lines_[line].entries.back();
    e.needs_flush = needs_flush;
    e.thread = static_cast<std::uint8_t>(thread_);
    off += piece;
    bytes += piece;
    len -= piece;
  }
}

void Px86Model::store_in_line(std::size_t line, std::size_t in_line, const std::byte* src,
                              std::size_t len) {
  Entry e;
  e.offset = static_cast<std::uint8_t>(in_line);
  e.len = static_cast<std::uint8_t>(len);
  std::memcpy(e.bytes.data(), src, len);
  lines_[line].entries.push_back(e);
}

void Px86Model::nt_store(std::size_t off, std::uint64_t value) {
  store(off, &value, sizeof value);
  flush(off, sizeof value);
}

Px86Model::FlushResult Px86Model::flush(std::size_t off, std::size_t len) {
  FlushResult r;
  if (off >= size_) return r;
  const std::size_t first = off & ~(kLine - 1);
  const std::size_t end = std::min(size_, off + (len ? len : 1));
  for (std::size_t line = first; line < end; line += kLine) {
    ++r.lines;
    auto it = lines_.find(line);
    const bool nothing_new =
        it == lines_.end() || it->second.marks[thread_] == it->second.entries.size();
    if (nothing_new) {
      if (r.redundant_lines++ == 0) r.first_redundant = line;
      continue;
    }
    it->second.marks[thread_] = static_cast<std::uint32_t>(it->second.entries.size());
  }
  return r;
}

std::uint32_t Px86Model::LineLog::max_mark() const noexcept {
  return *std::max_element(marks.begin(), marks.end());
}

bool Px86Model::fence() {
  bool ordered_something = false;
  for (auto it = lines_.begin(); it != lines_.end();) {
    LineLog& log = it->second;
    const std::uint32_t fold = global_fences_ ? log.max_mark() : log.marks[thread_];
    if (fold == 0) {
      ++it;
      continue;
    }
    ordered_something = true;
    apply(log, fold, durable_.data() + it->first);
    log.entries.erase(log.entries.begin(), log.entries.begin() + fold);
    for (std::uint32_t& m : log.marks) m = m > fold ? m - fold : 0;
    it = log.entries.empty() ? lines_.erase(it) : std::next(it);
  }
  return ordered_something;
}

void Px86Model::apply(const LineLog& log, std::size_t count, std::byte* line_base) {
  for (std::size_t i = 0; i < count; ++i) {
    const Entry& e = log.entries[i];
    std::memcpy(line_base + e.offset, e.bytes.data(), e.len);
  }
}

std::vector<std::uint32_t> Px86Model::choice_limits() const {
  std::vector<std::uint32_t> out;
  out.reserve(lines_.size());
  for (const auto& [line, log] : lines_) out.push_back(static_cast<std::uint32_t>(log.entries.size()));
  return out;
}

std::uint64_t Px86Model::image_count() const noexcept {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t n = 1;
  for (const auto& [line, log] : lines_) {
    const std::uint64_t f = log.entries.size() + 1;
    if (n > kMax / f) return kMax;
    n *= f;
  }
  return n;
}

bool Px86Model::build_image(std::span<const std::uint32_t> choice, std::byte* out,
                            std::size_t n) const {
  if (choice.size() != lines_.size() || n < extent_ || n > size_) return false;
  std::size_t i = 0;
  for (const auto& [line, log] : lines_) {
    if (choice[i++] > log.entries.size()) return false;
  }
  for_each_outside(gap_, 0, n, [&](std::size_t off, std::size_t len) {
    std::memcpy(out + off, durable_.data() + off, len);
  });
  i = 0;
  for (const auto& [line, log] : lines_) apply(log, choice[i++], out + line);
  return true;
}

namespace {
//! True if the log holds a store of thread t after t's mark that must be flushed (not a
//! volatile one).
bool has_unflushed(const Px86Model::LineLog& log, std::size_t t) noexcept {
  for (std::size_t i = log.marks[t]; i < log.entries.size(); ++i)
    if (log.entries[i].needs_flush && log.entries[i].thread == t) return true;
  return false;
}
}  // namespace

std::size_t Px86Model::first_unflushed() const noexcept {
  for (const auto& [line, log] : lines_)
    if (has_unflushed(log, thread_)) return line;
  return SIZE_MAX;
}

bool Px86Model::line_unflushed(std::size_t line) const noexcept {
  const auto it = lines_.find(line);
  return it != lines_.end() && has_unflushed(it->second, thread_);
}

std::size_t Px86Model::first_unfenced() const noexcept {
  for (const auto& [line, log] : lines_)
    if (log.marks[thread_] > 0) return line;
  return SIZE_MAX;
}

std::size_t Px86Model::unflushed_lines() const noexcept {
  return static_cast<std::size_t>(std::count_if(lines_.begin(), lines_.end(), [this](const auto& kv) {
    return has_unflushed(kv.second, thread_);
  }));
}

std::size_t Px86Model::unfenced_lines() const noexcept {
  return static_cast<std::size_t>(std::count_if(
      lines_.begin(), lines_.end(), [this](const auto& kv) { return kv.second.marks[thread_] > 0; }));
}

void Px86Model::absorb(std::size_t off, const std::byte* bytes, std::size_t len) {
  if (off >= size_) return;
  len = std::min(len, size_ - off);
  std::memcpy(shadow_.data() + off, bytes, len);
  std::memcpy(durable_.data() + off, bytes, len);
  extent_ = std::max(extent_, off + len);
}

}  // namespace wort::crashsim
