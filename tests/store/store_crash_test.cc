// tests/store/store_crash_test.cc — the crash simulator (src/crashsim) on wort::Store, for
// every persistent index kind: a put of a new key, a put replacing a key (with a value of
// another size), a remove and a WriteBatch (puts, a replace, a remove) run traced on a pool
// image in DRAM, with a crash point before every fence and at each acknowledgement. Each
// crash image (crashsim::select_images) is opened by the Store (recovery: the allocator's
// trace, then the replay of a committed batch log) and checked:
//   - it opens; verify() (the index and every value's checksum) and the allocator audit
//     are clean: no block leaked, none used twice;
//   - every key reads as the acknowledged state, or (inside a step) as the state before
//     or wholly after the step: a value old or new entire, a batch all or nothing;
//   - size() agrees; a put after the crash reads back and the audit stays clean;
//   - an image whose open replayed a committed batch (the first kSecondCrashRuns of them) is
//     opened again from its bytes under a second simulator: at every fence of that replay,
//     crash images (a few per point) must open to the whole batch applied (a crash during
//     recovery recovers too).
// The lints (MISSING_FLUSH, MISSING_FENCE, UNTRACKED_STORE, STORE_AFTER_COMMIT,
// ASSUMED_DURABLE) run on every traced step. A store's first open (its index and meta block
// made in a fresh pool) runs traced as well: every image opens as an empty store. Two broken
// variants must be caught: a put
// whose value blob is not written back, and a batch whose log is committed before its
// records are written.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "crashsim/simulator.h"
#include "pm/persist.h"
#include "support/crash_findings.h"
#include "pm/pool_layout.h"
#include "pm/tracer.h"
#include "store/store_impl.h"
#include "wort/index.h"
#include "wort/persist.h"
#include "wort/store.h"

namespace wort::test {
namespace {

constexpr std::size_t kLine = 64;
//! Images whose replay is crashed again, per test (each: every fence of the replay, up to 4
//! images a point): the first ones met.
constexpr std::size_t kSecondCrashRuns = 16;
using Model = std::map<std::string, std::string>;

bool small_scale() {
  const char* s = std::getenv("WORT_TEST_SCALE");
  return s != nullptr && std::string(s) == "small";
}

std::string show(const Model& m) {
  std::string s = "{";
  for (const auto& [k, v] : m) s += " " + k + "=(" + std::to_string(v.size()) + " bytes)";
  return s + " }";
}

//! Value bytes for a tag: every byte derived from the tag, so two values never share a line.
std::string val(int tag, std::size_t len) {
  std::string v(len, '\0');
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<char>(tag * 37 + i * 11 + 1);
  return v;
}

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, AlignedFree>;

class TraceMode {
 public:
  TraceMode() : saved_(pm::config()) {
    pm::Config c = saved_;
    c.mode = pm::Mode::trace;
    (void)pm::configure(c);
  }
  ~TraceMode() { (void)pm::configure(saved_); }

 private:
  pm::Config saved_;
};

using StepFn = std::function<void(Store&, Model&, std::vector<std::string>&)>;
struct Step {
  std::string name;
  StepFn fn;
};

void put(Store& s, Model& m, std::vector<std::string>& err, const std::string& k,
         const std::string& v) {
  if (Status st = s.put(k, v); st != Status::ok)
    err.push_back("put " + k + ": " + std::string(to_string(st)));
  m[k] = v;
}
void remove(Store& s, Model& m, std::vector<std::string>& err, const std::string& k) {
  auto r = s.remove(k);
  if (!r || *r != (m.count(k) != 0)) err.push_back("remove " + k);
  m.erase(k);
}

struct Outcome {
  std::size_t crash_points = 0, images = 0, second_crash_runs = 0;
  std::vector<std::string> findings;
  std::string summary() const {
    std::string s = std::to_string(crash_points) + " crash points, " + std::to_string(images) +
                    " images (" + std::to_string(second_crash_runs) +
                    " recoveries crashed again), " + std::to_string(findings.size()) + " findings";
    for (std::size_t i = 0; i < findings.size() && i < 6; ++i) s += "\n  " + findings[i];
    return s;
  }
  bool has(const std::string& prefix) const {
    for (const auto& f : findings)
      if (f.rfind(prefix, 0) == 0) return true;
    return false;
  }
};

class Run {
 public:
  Run(std::string kind, StepFn setup, std::vector<Step> steps, StoreBroken broken)
      : kind_(std::move(kind)), setup_(std::move(setup)), steps_(std::move(steps)),
        broken_(broken) {
    cap_ = small_scale() ? 24 : 64;
    random_ = small_scale() ? 3 : 8;
    pairs_ = small_scale() ? 12 : 32;
  }

  Outcome go() {
    TraceMode mode;
    Buffer live = fresh_pool();
    if (!live) return failed("SETUP: cannot create the pool");
    std::vector<std::string> err;
    {
      auto s = open(live.get());
      if (!s) return failed("SETUP: " + s.error().message);
      setup_(**s, model_, err);
    }
    if (!err.empty()) return failed("SETUP: " + err.front());
    img_ = buffer();
    img2_ = buffer();
    img3_ = buffer();
    if (!dry_run(live.get())) return out_;

    auto opened = open(live.get());
    if (!opened) return failed("SETUP: " + opened.error().message);
    std::unique_ptr<Store> store = std::move(opened).value();
    store->impl().broken = broken_;
    crashsim::Simulator sim;
    sim_ = &sim;
    sim.watch(live.get(), size_, size_);
    sim.set_point_handler([this](bool at_ack) { on_point(at_ack); });
    const std::uint64_t chunks_at =
        reinterpret_cast<const pm::PoolHeader*>(live.get())->first_chunk_offset;
    sim.set_lint_handler([this, chunks_at](crashsim::Lint l, std::size_t off, std::uintptr_t,
                                           const std::string& d) {
      if (l == crashsim::Lint::redundant_flush || l == crashsim::Lint::redundant_fence) return;
      // Chunk-table entries the allocator persists by its own protocol after the last
      // commit (a chunk emptied by a free after the commit that unlinked its last block).
      if (l == crashsim::Lint::store_after_commit && off < chunks_at) return;
      out_.findings.push_back(std::string(crashsim::lint_name(l)) + " at pool offset " +
                              std::to_string(off) + " in " + step_name() + ": " + d);
    });
    before_ = model_;
    Model live_model = model_;
    pm::Tracer* prev = pm::set_tracer(&sim);
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      step_ = static_cast<int>(i);
      after_ = afters_.at(i);
      steps_[i].fn(*store, live_model, err);
      if (live_model != after_)
        out_.findings.push_back("LIVE: " + steps_[i].name + " left " + show(live_model));
      sim.acknowledge();
      before_ = after_;
    }
    pm::set_tracer(prev);
    for (const auto& e : err) out_.findings.push_back("LIVE: " + e);
    store.reset();
    return out_;
  }

 private:
  Outcome failed(const std::string& why) {
    out_.findings.push_back(why);
    return out_;
  }
  std::string step_name() const {
    return step_ < 0 ? std::string("setup") : steps_[static_cast<std::size_t>(step_)].name;
  }
  Buffer buffer() const {
    Buffer b(static_cast<std::byte*>(std::aligned_alloc(kLine, (size_ + kLine - 1) & ~(kLine - 1))));
    std::memset(b.get(), 0, size_);
    return b;
  }
  Result<std::unique_ptr<Store>> open(std::byte* image) {
    return store::open_image({image, size_}, "pool image");
  }

  Buffer fresh_pool() {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("wort-store-crash-" + std::to_string(getpid()) + ".pool"))
                                 .string();
    std::remove(path.c_str());
    {
      StoreOptions o;
      o.kind = kind_;
      o.size = 1u << 20;
      if (!Store::open(path, o)) return nullptr;
    }
    size_ = static_cast<std::size_t>(std::filesystem::file_size(path));
    Buffer b = buffer();
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(b.get()), static_cast<std::streamsize>(size_));
    const bool ok = in.gcount() == static_cast<std::streamsize>(size_);
    std::remove(path.c_str());
    return ok ? std::move(b) : nullptr;
  }

  bool dry_run(const std::byte* live) {
    Buffer copy = buffer();
    std::memcpy(copy.get(), live, size_);
    auto s = open(copy.get());
    if (!s) {
      out_.findings.push_back("SETUP: dry open: " + s.error().message);
      return false;
    }
    Model m = model_;
    std::vector<std::string> err;
    for (const Step& st : steps_) {
      st.fn(**s, m, err);
      afters_.push_back(m);
    }
    for (const auto& e : err) out_.findings.push_back("LIVE (dry run): " + e);
    return err.empty();
  }

  void on_point(bool at_ack) {
    ++out_.crash_points;
    crashsim::select_images(sim_->model().choice_limits(), cap_, random_,
                            crashsim::mix_seed(7, out_.crash_points),
                            [&](std::span<const std::uint32_t> ch) { check_image(ch, at_ack); },
                            pairs_);
  }

  void check_image(std::span<const std::uint32_t> choice, bool at_ack) {
    if (!sim_->model().build_image(choice, img_.get(), size_)) {
      out_.findings.push_back("could not build a crash image");
      return;
    }
    ++out_.images;
    std::memcpy(img2_.get(), img_.get(), size_);  // for a crash during its recovery
    pm::Tracer* prev = pm::set_tracer(nullptr);  // recovery writes the image, not the pool
    const std::string problem = check_recovered(at_ack);
    pm::set_tracer(prev);
    test::add_image_finding(out_.findings, problem, out_.crash_points, at_ack, step_name(),
                            choice);
  }

  std::string check_recovered(bool at_ack) {
    auto opened = open(img_.get());
    if (!opened) return "RECOVERY_FAILED: " + opened.error().message;
    Store& s = **opened;
    if (auto v = s.verify(); !v) return "VERIFY: " + v.error().message;
    if (auto a = s.impl().audit(); !a.ok()) return "AUDIT: " + a.describe();
    std::set<std::string> keys;
    for (const auto& [k, v] : before_) keys.insert(k);
    for (const auto& [k, v] : after_) keys.insert(k);
    Model got;
    for (const std::string& k : keys) {
      auto r = s.get(k);
      if (!r) return "GET " + k + ": " + r.error().message;
      if (r->has_value()) got[k] = **r;
    }
    if (got != after_ && (at_ack || got != before_))
      return "CONTENTS: the image holds " + show(got) + ", want " + show(after_) +
             (at_ack ? "" : " or " + show(before_));
    if (s.size() != got.size())
      return "SIZE: " + std::to_string(s.size()) + ", want " + std::to_string(got.size());
    // The whole store through a cursor: no other key.
    std::size_t n = 0;
    for (auto c = s.cursor(); c.valid(); c.next()) ++n;
    if (n != got.size()) return "CURSOR: " + std::to_string(n) + " keys";
    if (s.put("after-crash", val(99, 70)) != Status::ok)
      return "CONTINUATION: a put after the crash failed";
    auto back = s.get("after-crash");
    if (!back || !back->has_value() || **back != val(99, 70))
      return "CONTINUATION: the put after the crash does not read back";
    if (auto a = s.impl().audit(); !a.ok()) return "AUDIT after the continuation: " + a.describe();
    if (s.impl().replayed && out_.second_crash_runs < kSecondCrashRuns) return second_crash();
    return {};
  }

  //! The image in img2_ holds a committed batch log: its recovery (the replay) runs traced,
  //! and a crash at any of its fences must recover to the whole batch.
  std::string second_crash() {
    ++out_.second_crash_runs;
    crashsim::Simulator inner;
    inner.watch(img2_.get(), size_, size_);
    std::string problem;
    inner.set_point_handler([&](bool) {
      if (!problem.empty()) return;
      const auto limits = inner.model().choice_limits();
      crashsim::select_images(
          limits, 4, 1, crashsim::mix_seed(13, out_.images),
          [&](std::span<const std::uint32_t> ch) {
            if (!problem.empty() || !inner.model().build_image(ch, img3_.get(), size_)) return;
            ++out_.images;
            pm::Tracer* in = pm::set_tracer(nullptr);
            auto o = open(img3_.get());
            if (!o) {
              problem = "SECOND_CRASH: recovery failed: " + o.error().message;
            } else {
              Model got;
              for (const auto& [k, v] : before_) {
                auto r = (*o)->get(k);
                if (r && r->has_value()) got[k] = **r;
              }
              for (const auto& [k, v] : after_) {
                auto r = (*o)->get(k);
                if (r && r->has_value()) got[k] = **r;
              }
              if (got != after_) problem = "SECOND_CRASH: the image holds " + show(got) + ", want " + show(after_);
              else if (auto a = (*o)->impl().audit(); !a.ok()) problem = "SECOND_CRASH AUDIT: " + a.describe();
            }
            pm::set_tracer(in);
          },
          4);
    });
    pm::Tracer* prev = pm::set_tracer(&inner);
    auto s = open(img2_.get());
    pm::set_tracer(prev);
    if (!s) return "SECOND_CRASH: the traced recovery failed: " + s.error().message;
    return problem;
  }

  std::string kind_;
  StepFn setup_;
  std::vector<Step> steps_;
  StoreBroken broken_;
  std::size_t size_ = 0;
  Model model_, before_, after_;
  std::vector<Model> afters_;
  Buffer img_, img2_, img3_;
  crashsim::Simulator* sim_ = nullptr;
  int step_ = -1;
  std::size_t cap_ = 64, random_ = 8, pairs_ = 32;
  Outcome out_;
};

void setup3(Store& s, Model& m, std::vector<std::string>& e) {
  put(s, m, e, "alpha", val(1, 100));
  put(s, m, e, "beta", val(2, 300));
  put(s, m, e, "gamma", val(3, 20));
}

std::vector<Step> single_steps() {
  return {{"put delta (new key)",
           [](Store& s, Model& m, auto& e) { put(s, m, e, "delta", val(4, 150)); }},
          {"put alpha (replace, larger)",
           [](Store& s, Model& m, auto& e) { put(s, m, e, "alpha", val(5, 500)); }},
          {"remove beta", [](Store& s, Model& m, auto& e) { remove(s, m, e, "beta"); }}};
}

std::vector<Step> batch_steps() {
  return {{"batch {put gamma, put epsilon, remove alpha, put delta, put gamma again}",
           [](Store& s, Model& m, auto& e) {
             WriteBatch b;
             b.put("gamma", val(6, 90));
             b.put("epsilon", val(7, 200));
             b.remove("alpha");
             b.put("delta", val(8, 10));
             b.put("gamma", val(9, 40));
             if (Status st = s.write(b); st != Status::ok)
               e.push_back("write: " + std::string(to_string(st)));
             m["gamma"] = val(9, 40);
             m["epsilon"] = val(7, 200);
             m.erase("alpha");
             m["delta"] = val(8, 10);
           }}};
}

Outcome run(const std::string& kind, std::vector<Step> steps,
            StoreBroken broken = StoreBroken::none) {
  Run r(kind, setup3, std::move(steps), broken);
  Outcome o = r.go();
  std::printf("[store crash %s] %s\n", kind.c_str(), o.summary().c_str());
  return o;
}

std::vector<std::string> persistent_kinds() {
  std::vector<std::string> out;
  for (const std::string& k : Index::kinds())
    if (k != "art") out.push_back(k);
  return out;
}

class StoreCrash : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreCrash, PutNewReplaceRemove) {
  const Outcome o = run(GetParam(), single_steps());
  EXPECT_TRUE(o.findings.empty()) << o.summary();
  EXPECT_GT(o.images, 0u);
}

TEST_P(StoreCrash, BatchIsAllOrNothing) {
  const Outcome o = run(GetParam(), batch_steps());
  EXPECT_TRUE(o.findings.empty()) << o.summary();
  EXPECT_GT(o.images, 0u);
  EXPECT_GT(o.second_crash_runs, 0u) << "no image replayed a committed batch";
}


//! A store's first open under the simulator: a pool just created (values_are_blocks, no
//! index yet) gets its index and its meta block. Every crash image must open as an empty
//! store that verifies, audits clean and takes a put.
Outcome first_open(const std::string& kind) {
  Outcome out;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("wort-store-first-" + std::to_string(getpid()) + ".pool"))
                               .string();
  std::remove(path.c_str());
  {
    PoolOptions po;
    po.kind = kind;
    po.size = 1u << 20;
    po.values_are_blocks = true;
    if (!Pool::create(path, po)) return out.findings.push_back("SETUP: create"), out;
  }
  const std::size_t size = static_cast<std::size_t>(std::filesystem::file_size(path));
  auto buffer = [&] {
    Buffer b(static_cast<std::byte*>(std::aligned_alloc(kLine, (size + kLine - 1) & ~(kLine - 1))));
    std::memset(b.get(), 0, size);
    return b;
  };
  Buffer live = buffer(), img = buffer();
  {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(live.get()), static_cast<std::streamsize>(size));
  }
  std::remove(path.c_str());
  TraceMode mode;
  crashsim::Simulator sim;
  sim.watch(live.get(), size, size);
  sim.set_point_handler([&](bool) {
    ++out.crash_points;
    crashsim::select_images(
        sim.model().choice_limits(), 32, 4, crashsim::mix_seed(11, out.crash_points),
        [&](std::span<const std::uint32_t> ch) {
          if (!sim.model().build_image(ch, img.get(), size)) return;
          ++out.images;
          pm::Tracer* prev = pm::set_tracer(nullptr);
          std::string problem;
          if (auto s = store::open_image({img.get(), size}, "pool image"); !s) {
            problem = "RECOVERY_FAILED: " + s.error().message;
          } else if (auto v = (*s)->verify(); !v) {
            problem = "VERIFY: " + v.error().message;
          } else if ((*s)->size() != 0 || (*s)->put("k", val(1, 80)) != Status::ok) {
            problem = "CONTENTS: not an empty store that takes a put";
          } else if (auto a = (*s)->impl().audit(); !a.ok()) {
            problem = "AUDIT: " + a.describe();
          }
          pm::set_tracer(prev);
          if (!problem.empty() && out.findings.size() < 20) out.findings.push_back(problem);
        },
        16);
  });
  const std::uint64_t chunks_at =
      reinterpret_cast<const pm::PoolHeader*>(live.get())->first_chunk_offset;
  sim.set_lint_handler([&](crashsim::Lint l, std::size_t off, std::uintptr_t, const std::string& d) {
    if (l == crashsim::Lint::redundant_flush || l == crashsim::Lint::redundant_fence) return;
    if (l == crashsim::Lint::store_after_commit && off < chunks_at) return;  // as in Run
    out.findings.push_back(std::string(crashsim::lint_name(l)) + " at pool offset " +
                           std::to_string(off) + " in the first open: " + d);
  });
  pm::Tracer* prev = pm::set_tracer(&sim);
  {
    auto p = Pool::attach({live.get(), size}, {}, "pool image");
    if (!p) {
      out.findings.push_back("SETUP: attach: " + p.error().message);
    } else if (auto s = Store::Impl::attach(std::move(p).value(), true, "pool image"); !s) {
      out.findings.push_back("LIVE: the first open failed: " + s.error().message);
    } else {
      sim.acknowledge();
    }
  }
  pm::set_tracer(prev);
  std::printf("[store first open %s] %s\n", kind.c_str(), out.summary().c_str());
  return out;
}

TEST_P(StoreCrash, FirstOpen) {
  const Outcome o = first_open(GetParam());
  EXPECT_TRUE(o.findings.empty()) << o.summary();
  EXPECT_GT(o.images, 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreCrash, ::testing::ValuesIn(persistent_kinds()),
                         [](const auto& i) { return i.param; });

// The tests can fail: a put whose blob is not written back leaves its lines dirty at the
// acknowledgement, and a crash image keeps the index's commit but not the value (the
// checksum then answers corrupt).
TEST(StoreCrashBroken, BlobNotWrittenBackIsCaught) {
  const Outcome o = run("wort", single_steps(), StoreBroken::blob_not_written_back);
  EXPECT_TRUE(o.has("MISSING_FLUSH")) << o.summary();
  EXPECT_TRUE(o.has("VERIFY") || o.has("GET") || o.has("CONTENTS")) << o.summary();
}

// A batch whose log is named before its records are written: an image with the commit and
// not the records holds a damaged committed log (recovery refuses it).
TEST(StoreCrashBroken, BatchCommitBeforeRecordsIsCaught) {
  const Outcome o = run("wort", batch_steps(), StoreBroken::log_commit_before_records);
  EXPECT_TRUE(o.has("RECOVERY_FAILED") || o.has("CONTENTS")) << o.summary();
}

}  // namespace
}  // namespace wort::test
