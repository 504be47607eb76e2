# lenspec: `make demo` runs the main job on the shipped model, `make test`
# runs the test suite. Both install what they need first.
SHELL := /bin/bash
GO ?= go
BIN := bin/lenspec
MODEL := models/mmnist-rnn

.PHONY: all setup build data demo test test-purego lint bench bench-peer nmt clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	$(GO) build -o $(BIN) ./cmd/lenspec

data: build
	@$(BIN) data mnist

demo: data
	@bash scripts/demo.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags purego ./...
	CGO_ENABLED=0 $(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

test: data lint
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags purego ./...

bench: data
	$(GO) test -run '^$$' -bench . -benchtime 20x ./bench/...

# Rebuild the shipped translator from Debian's Ding dictionary (trans-de-en,
# installed by setup): corpus, BPE, training (about 50 minutes on 2 vCPUs;
# rerun to resume after an interruption), evaluation, and the GPL notice.
nmt: build
	$(BIN) train nmt --out models/nmt-de-en

# The peer benchmark: the same operations in PyTorch (Debian's python3-torch,
# installed here), interleaved with lenspec's, each in 5 to 15 rounds until
# its ratio is within 5 % or 2 minutes of rounds are spent (docs/BENCHMARKS.md;
# about 4 minutes in all). Ends with the five "ratio <op> <x>" lines of both
# models together: the loop holds them back until both tables are printed.
bench-peer: data
	@bash scripts/setup.sh python3-torch python3-numpy
	set -o pipefail; { $(BIN) bench --model $(MODEL) --peer bench/peer.py && \
	  $(BIN) bench --model models/nmt-de-en --peer bench/peer_nmt.py; } | \
	  { r=; while IFS= read -r l; do if [[ $$l == "ratio "* ]]; then r+=$$l$$'\n'; else printf '%s\n' "$$l"; fi; done; printf '%s' "$$r"; }

clean:
	rm -rf bin
