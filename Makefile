# wort — the two commands:
#   make run    install what is missing, build Release, run the main job on a default pool
#   make test   install what is missing, build Release and ASan+UBSan and run every test;
#               build with ThreadSanitizer and run the concurrency tests (*_concurrency_test.cc)
#               The differential tests use the paper's key sets at 100k keys here
#               (WORT_TEST_SCALE=small), so that make test stays well inside CI's time.
# Other targets: build, build-asan, build-tsan, deps, clean,
#   soak    the long runs, before an issue is resolved: the differential tests at the paper's
#           1M keys, and 300 damaged pools per damage kind and index (WORT_FUZZ_TRIALS), for the
#           indexes and for Store pools
#   mutate  the crash tests' mutation score: tools/mutate.py over tools/mutations/*.txt, in a
#           scratch copy under /tmp, every mutant compiled into one build (mutant schemata,
#           WORT_MUTANT=K selects one); MUTATE_ARGS="--one-at-a-time" for one build per mutant

JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
CMAKE_FLAGS ?=

.PHONY: run test build build-asan build-tsan deps clean test-release test-asan test-tsan soak mutate

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

# The sanitizer builds compile at -O1 with line tables only (-g1): half the compile time of
# -O2 -g (8.3 -> 4.2 s of CPU for one test file under ASan), and a sanitizer report still
# names file and line; -O1 is what the sanitizers' own documentation suggests.
SAN_FLAGS = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja $(SAN_FLAGS) -DWORT_SANITIZE=ON -DWORT_FAULTS=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(ASAN_BUILD) -j $(JOBS)

build-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -G Ninja $(SAN_FLAGS) -DWORT_TSAN=ON -DWORT_FAULTS=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(TSAN_BUILD) -j $(JOBS) wort_tests

run: build
	@tools/run-main.sh $(BUILD)

test-release: build
	@python3 tools/lint-docs.py
	@cd $(BUILD) && WORT_TEST_SCALE=small ctest -j $(JOBS) --output-on-failure --timeout 900

# malloc_context_size=5 (ASan's default keeps 30 frames of every allocation's and free's
# stack): 5 frames name the caller of a use-after-free's free, and the crash simulator,
# which allocates per crash image, runs ~30% faster (FastFairCrash.SampledMixedOperations
# 50.4 -> 34.4 s). WORT_TEST_SCALE=small as in the Release run (the concurrency tests'
# work multiplier).
test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:malloc_context_size=5 \
	  UBSAN_OPTIONS=print_stacktrace=1 WORT_TEST_SCALE=small \
	  ctest -j $(JOBS) --output-on-failure --timeout 1500

test-tsan: build-tsan
	@cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest -j $(JOBS) --output-on-failure --timeout 1500

test: test-release test-asan test-tsan

soak: build
	@cd $(BUILD) && WORT_TEST_SCALE=full ctest -j $(JOBS) --output-on-failure --timeout 3600 \
	  -R 'PaperSets/'
	@cd $(BUILD) && WORT_FUZZ_TRIALS=300 ./kit_damaged_pool_test
	@cd $(BUILD) && WORT_FUZZ_TRIALS=300 ./store_store_damaged_pool_test

mutate: deps
	@python3 tools/mutate.py --jobs $(JOBS) --json results/mutate.json $(MUTATE_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
