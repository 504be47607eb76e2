# lenspec: `make demo` runs the main job on the shipped model, `make test`
# runs the test suite. Both install what they need first.
SHELL := /bin/bash
GO ?= go
BIN := bin/lenspec
MODEL := models/mmnist-rnn

.PHONY: all setup build data demo slurm-demo test test-purego lint bench bench-peer bench-verify-peer nmt nmt-ding check-results check-verdicts clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	$(GO) build -o $(BIN) ./cmd/lenspec

data: build
	@$(BIN) data mnist

demo: data
	@bash scripts/demo.sh

# Sharding on a real batch system: a one-host Slurm cluster (installs
# slurm-wlm and munge; root), a verification array of docs/slurm/ with one
# task cancelled and one requeued mid-run, the merge job, and the merged
# records checked against an unsharded run (docs/scale-out.md).
slurm-demo: data
	$(GO) run ./internal/slurmdemo/slurm-demo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags purego ./...
	CGO_ENABLED=0 $(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# -timeout 30m: go test's default 10 minutes per package is less than the Slurm
# test and the verify package take on a busy 2-vCPU machine (530 s at load 10).
test: data lint
	@bash scripts/setup.sh python3-torch python3-numpy # the PyTorch tests (model/showtell_torch_test.go, nn/transformer_torch_test.go)
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 30m -tags purego ./...

# Replay every witness the shipped results files name, from the repository
# alone (docs/runs/README.md): exit 1 if a record disagrees with its
# witness's float64 replay.
check-results: data
	$(BIN) results check $$(find docs/runs -name '*.jsonl' | sort)

# Verify SAMPLES of the shipped verdicts again, each with its record's model,
# data and settings (lenspec results rerun; docs/runs/README.md): exit 1 on a
# verdict flip (robust against vulnerable) or a failed rerun. The choice is
# stratified across files and verdicts, shortest recorded time first, within
# BUDGET seconds of recorded time. The files are every verification and bound
# record file whose models are shipped (models/, by sha256) and whose records
# hold their settings (not schema 0).
SAMPLES ?= 300
BUDGET ?= 1200
UNRUNNABLE := $(addprefix docs/runs/,verify-crown/verify-crown-a% verify-crown/verify-crown-b% \
	verify-crown/verify-crown-e1-% verify-crown/verify-crown-f% verify-crown/verify-crown-kd% \
	verify-crown/verify-crown-mix% verify-crown/verify-crown-s1-% verify-ibp/verify-ibp-sweep% \
	verify-rnn-cuts-clip/b7-% verify-rnn/verify.jsonl verify-rs/verify-rs.jsonl \
	verify-rs/verify-rs-notokens% verify-rs/verify-rs-stronger%)
VERDICT_RECORDS := $(filter-out $(UNRUNNABLE),$(sort $(wildcard docs/runs/verify-*/*.jsonl \
	docs/runs/showtell-verify/*.jsonl docs/runs/bound-curves/*.jsonl docs/runs/first-turn/*.jsonl)))
check-verdicts: data
	$(BIN) results rerun --samples $(SAMPLES) --budget $(BUDGET) $(VERDICT_RECORDS)

bench: data
	$(GO) test -run '^$$' -bench . -benchtime 20x ./bench/...

# Rebuild the shipped translator models/nmt-m30k-de-en from Multi30k:
# make nmt MULTI30K=DIR, DIR a copy of multi30k/dataset's data/task1/raw/
# (the dataset states no licence, so lenspec never downloads it). Imports
# and checks the files, learns the BPE, trains (about 50 minutes on 2 vCPUs;
# rerun to resume after an interruption), evaluates, and prints the time.
NMT_FLAGS := --corpus multi30k --seed 1 --epochs 14 --batch 64 --vocab 8000 --dropout 0.3 \
	--label-smoothing 0.1 --lr 1e-3 --final-lr 5e-5 --decoder 512 --select-dev --shards 2
nmt: build
	@if [[ -z "$(MULTI30K)" ]]; then echo "make nmt MULTI30K=DIR: DIR holds Multi30k's raw files (train, val, test_2016_flickr; .de.gz and .en.gz)" >&2; exit 2; fi
	$(BIN) data multi30k --from "$(MULTI30K)"
	@start=$$(date +%s); \
	  $(BIN) train nmt --out models/nmt-m30k-de-en $(NMT_FLAGS) || exit $$?; \
	  echo "make nmt: models/nmt-m30k-de-en rebuilt in $$(( $$(date +%s) - start )) s"

# The earlier, weaker translator from Debian's Ding dictionary (trans-de-en,
# installed by setup; about 50 minutes; GPL-2+ weights).
nmt-ding: build
	$(BIN) train nmt --corpus ding --out models/nmt-de-en --seed 1 --epochs 8 --batch 128 --vocab 8000 --shards 2

# The peer benchmark: the same operations in PyTorch (Debian's python3-torch,
# installed here), interleaved with lenspec's, each in 5 to 15 rounds until
# its ratio is within 5 % or 2 minutes of rounds are spent (docs/BENCHMARKS.md;
# about 4 minutes in all). Ends with the five "ratio <op> <x>" lines of both
# models together, then "loaded: ..." if the machine was busy: the loop holds
# them back until both tables are printed. ISA=avx2 measures an AVX2 machine
# on one with AVX-512 (lenspec's, OpenBLAS's and PyTorch's kernels capped at
# AVX2); RECORD collects one JSON line per operation.
ISA ?= native
RECORD ?= runs/bench-peer-$(ISA).jsonl
bench-peer: data
	@bash scripts/setup.sh python3-torch python3-numpy
	@mkdir -p $(dir $(RECORD))
	set -o pipefail; { $(BIN) bench --model $(MODEL) --peer bench/peer.py --isa $(ISA) --record $(RECORD) && \
	  $(BIN) bench --model models/nmt-de-en --peer bench/peer_nmt.py --isa $(ISA) --record $(RECORD); } | \
	  { r=; while IFS= read -r l; do if [[ $$l == "ratio "* || $$l == "loaded: "* ]]; then r+=$$l$$'\n'; else printf '%s\n' "$$l"; fi; done; printf '%s' "$$r"; }

# The verifier peer benchmark: the margins of the clean path of the first
# test canvases (VERIFY_PEER_FLAGS: --images 5 --eps 0.01 --iters 20 by
# default), bounded by lenspec's verifier and by auto_LiRPA 0.4.0 (IBP, CROWN,
# α-CROWN at the same iteration count; one thread each) on the ReLU RNN and
# the LSTM captioner (docs/BENCHMARKS.md). auto_LiRPA (BSD-3) is never
# shipped: LIRPA_TAR is unpacked into the cache at run time and put on the
# peer's PYTHONPATH; its Python dependencies are Debian's. Ends with the
# "ratio <model>/<method> <x>" and "tighter <model>/<method> <share>" lines.
LIRPA_TAR ?= ../shared/peers/auto_LiRPA-2023-10.tar.gz
LIRPA_CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/lenspec/peers
LIRPA_DIR := $(LIRPA_CACHE)/auto_LiRPA-0.4.0-2023-10
bench-verify-peer: data
	@bash scripts/setup.sh python3-torch python3-torchvision python3-numpy python3-appdirs python3-tqdm python3-packaging python3-yaml
	@if [[ ! -f "$(LIRPA_DIR)/auto_LiRPA/__init__.py" ]]; then \
	  if [[ ! -f "$(LIRPA_TAR)" ]]; then echo "make bench-verify-peer: $(LIRPA_TAR): no such file (LIRPA_TAR=path of auto_LiRPA-2023-10.tar.gz)" >&2; exit 2; fi; \
	  mkdir -p "$(LIRPA_CACHE)" && tar -xzf "$(LIRPA_TAR)" -C "$(LIRPA_CACHE)"; fi
	$(GO) run ./bench/verifypeer --lirpa "$(LIRPA_DIR)" $(VERIFY_PEER_FLAGS)

clean:
	rm -rf bin
