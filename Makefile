# wort — the two commands:
#   make run    install what is missing, build Release, run the main job on a default pool
#   make test   install what is missing, build Release and ASan+UBSan and run every test;
#               build with ThreadSanitizer and run the concurrency tests (*_concurrency_test.cc)
# Other targets: build, build-asan, build-tsan, deps, clean, mutate (the crash tests' mutation score:
#   tools/mutate.py over tools/mutations/*.txt, in a scratch copy under /tmp; minutes).

JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
CMAKE_FLAGS ?=

.PHONY: run test build build-asan build-tsan deps clean test-release test-asan test-tsan mutate

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWORT_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(ASAN_BUILD) -j $(JOBS)

build-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWORT_TSAN=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(TSAN_BUILD) -j $(JOBS) wort_tests

run: build
	@tools/run-main.sh $(BUILD)

test-release: build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 900

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -j $(JOBS) --output-on-failure --timeout 1500

test-tsan: build-tsan
	@cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest -j $(JOBS) --output-on-failure --timeout 1500

test: test-release test-asan test-tsan

mutate: deps
	@python3 tools/mutate.py --jobs $(JOBS) $(MUTATE_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
