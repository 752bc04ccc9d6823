# sdfed front door.
#   make test    install the Debian packages, build every target, run every test
#   make run     install, build, and run the main job (see README.md)
#   make run-cluster  the same federation on NODES=3 aggregator nodes, PostgreSQL and HAProxy (docs/cluster.md)
#   make build   native build only (build/sdfed), packages assumed present
#   make check   the inner loop: the native build and its C tests (ctest -L unit), nothing installed
#   make test-browser  the wasm client and the page in Chromium (part of make test)
#   make bench   benchmarks (timings are never part of the tests)
#   make random-model SHAPE=vit-b-32  a ViT-B/32-shaped CLIP with random weights (models/random-vit-b-32.q8_0.gguf)
#   make bench-browser  the browser part of bench-peers alone: sdfed vs onnxruntime-web in Chromium
# Builds: build/ (native, gcc) and build/targets/<name>/ for the
# other toolchains: clang, asan (clang + ASan/UBSan), emscripten, wasi, fuzz.

JOBS ?= 2
# a tree's build takes JOBS jobs, or under a parallel make (make -j, make
# builds) the jobs of that make's pool, which the "+" recipes pass on
TREE_JOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j $(JOBS))
CLIP_DATA := $(abspath ../shared/clip)
export NODE_PATH ?= /usr/share/nodejs

# make bench's ONNX Runtime peers and FMA peak (tools/bench/peers.sh, peak.sh)
.PHONY: bench-deps bench-browser bench-peers
.PHONY: random-model
.PHONY: all deps build check build-clang build-asan build-emscripten build-wasi build-fuzz builds web test test-browser run run-cluster bench \
        compare compare-paper clean

all: build

deps:
	bash tools/install-deps.sh

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
	+cmake --build build $(TREE_JOBS)

# the C test programs of the native tree (their oracles' fixtures come with them), nothing installed
check: build
	ctest --test-dir build -L unit -j $(JOBS) --output-on-failure

build-clang:
	cmake -S . -B build/targets/clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang
	+cmake --build build/targets/clang $(TREE_JOBS)

build-asan:
	cmake -S . -B build/targets/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DSDFED_SANITIZE=ON
	+cmake --build build/targets/asan $(TREE_JOBS)

build-emscripten:
	cmake -S . -B build/targets/emscripten -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/emscripten.cmake
	+cmake --build build/targets/emscripten $(TREE_JOBS)

build-wasi:
	cmake -S . -B build/targets/wasi -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/wasi.cmake
	+cmake --build build/targets/wasi $(TREE_JOBS)

build-fuzz:
	cmake -S . -B build/targets/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DSDFED_FUZZ=ON
	+cmake --build build/targets/fuzz $(TREE_JOBS) --target fuzzers

# every tree at once, in one pool of JOBS jobs: one tree's configuring and
# linking, which use a core each, no longer leave the other idle
builds:
	+$(MAKE) --no-print-directory -j $(JOBS) build build-clang build-asan build-emscripten build-wasi build-fuzz

# the browser build of the client only (what the page loads from /wasm/)
web:
	cmake -S . -B build/targets/emscripten -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/emscripten.cmake
	cmake --build build/targets/emscripten -j $(JOBS) --target sdfed-wasm sdfed-wasm-threads

# prints how long the installs, the builds and each suite took
test:
	@t=$$(date +%s); $(MAKE) --no-print-directory deps && echo "make test: installs took $$(($$(date +%s) - t)) s"
	@t=$$(date +%s); $(MAKE) --no-print-directory builds && echo "make test: builds took $$(($$(date +%s) - t)) s"
	bash tests/run-all.sh

test-browser: deps build web
	cmake --build build/targets/emscripten -j $(JOBS) --target test_kernels_web
	bash tests/browser/run.sh

run: deps build web
	bash tools/run.sh

# NODES=3 PORT=8080 CLIENTS=4 TASK=...: state/cluster-<task>/ holds PostgreSQL's data and the logs
NODES ?= 3
run-cluster: deps build web
	NODES=$(NODES) bash tools/run-cluster.sh

bench: deps bench-deps build web
	bash tools/bench/run.sh

# the peers' extra Debian package (python3-onnx, to export the models); their
# npm packages (tools/bench/package.json) are installed by peers.sh itself
bench-deps:
	bash tools/install-deps.sh --bench

bench-browser: deps bench-deps build web
	bash tools/bench/peers.sh browser

# the race against ONNX Runtime (native and browser) and the kernels' FLOP/s alone
bench-peers: deps bench-deps build web
	bash tools/bench/peers.sh all
	bash tools/bench/peak.sh

# make random-model [SHAPE=vit-b-32|vit-b-16] [TYPE=q8_0|f16|f32]: models/random-SHAPE.TYPE.gguf, a CLIP of
# that real model's exact shape with random weights (the same download, memory and speed as the real one;
# its features mean nothing), for trying the 224 x 224 path before converting a real checkpoint
SHAPE ?= vit-b-32
TYPE ?= q8_0
random-model: deps build
	/usr/bin/python3 tools/make_random_clip.py --shape $(SHAPE) build/random-$(SHAPE).safetensors
	build/sdfed convert --in build/random-$(SHAPE).safetensors --out models/random-$(SHAPE).$(TYPE).gguf --type $(TYPE)
	rm -f build/random-$(SHAPE).safetensors

# make compare TASK=tasks/fmnist-pathological.json [SEEDS=5] [METHODS=ablation|lambda|gamma|longer|secure|"coop sdfed"]
# [LRS=0.003,0.01] (the paper protocol's tasks, tasks/paper-*.json, choose each method's lr from the papers' grid by
# default; ablation, lambda, gamma, longer and secure run at the rates their comparison chose; secure: sdfed plain,
# with secure aggregation, and with distributed DP at epsilon 8 and 3)
TASK ?= tasks/fmnist-pathological.json
SEEDS ?= 5
METHODS ?= zeroshot coop promptfl promptfolio fedpha fedot fedotp sdfed
LRS ?= $(if $(filter ablation lambda gamma longer secure,$(METHODS)),,$(if $(findstring paper-,$(TASK)),0.001$(,)0.003$(,)0.01$(,)0.03$(,)0.1))
, := ,
compare: deps build
	/usr/bin/python3 tools/compare.py --task $(TASK) --seeds $(SEEDS) --methods "$(METHODS)" $(if $(LRS),--lrs $(LRS))

# make compare-paper [MODEL=OTHER.gguf] [SEEDS=5] [SWEEP_SEEDS=3]: the whole paper protocol in one command: every setting
# (tasks/paper-*.json) with each method's lr chosen on validation, the methods it left rising again with 3 times
# the rounds (one seed), then SDFed's ablation and the lambda and gamma sweeps in each; resumable (about 10 hours
# on 2 cores with the default model). Its image features are docs/results.md's, a Q8_0 tower on f32 activations
# (PAPER_IMAGES= for the integer path).
# Every finished run is archived in docs/results/runs (the runs behind docs/results.md), and a run found
# there, made by the same task and flags, is not run again
PAPER_SETTINGS := pathological hetero domains dirichlet
PAPER_IMAGES := --f32-images
PAPER_COMPARE = /usr/bin/python3 tools/compare.py $(if $(MODEL),--model $(MODEL)) $(PAPER_IMAGES) --archive docs/results/runs
SWEEP_SEEDS ?= 3
compare-paper: deps build
	for t in $(PAPER_SETTINGS); do \
	  $(PAPER_COMPARE) --seeds $(SEEDS) --task tasks/paper-$$t.json --lrs 0.001,0.003,0.01,0.03,0.1 && \
	  $(PAPER_COMPARE) --seeds 1 --task tasks/paper-$$t.json --methods longer && \
	  $(PAPER_COMPARE) --seeds $(SEEDS) --task tasks/paper-$$t.json --methods ablation || exit 1; \
	  for m in lambda gamma; do $(PAPER_COMPARE) --seeds $(SWEEP_SEEDS) --task tasks/paper-$$t.json --methods $$m || exit 1; done; \
	done

clean:
	rm -rf build
