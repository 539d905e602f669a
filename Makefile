# wort — the two commands:
#   make run    install what is missing, build Release, run the main job on a default pool
#   make test   install what is missing, build Release and ASan+UBSan, run every test
# Other targets: build, build-asan, deps, clean, mutate (the crash tests' mutation score:
#   tools/mutate.py over tools/mutations/*.txt, in a scratch copy under /tmp; minutes).

JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=

.PHONY: run test build build-asan deps clean test-release test-asan mutate

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWORT_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@ninja -C $(ASAN_BUILD) -j $(JOBS)

run: build
	@tools/run-main.sh $(BUILD)

test-release: build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 900

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -j $(JOBS) --output-on-failure --timeout 1500

test: test-release test-asan

mutate: deps
	@python3 tools/mutate.py --jobs $(JOBS) $(MUTATE_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
