# kafka-iggy — a Kafka-protocol sidecar for Apache Iggy.
#
# Newcomer set-up is two commands: `make run` and `make test` (see README.md).

SHELL        := /bin/bash
GO           ?= go
BIN          := bin/kafka-iggy
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -s -w -X main.version=$(VERSION)
FUZZTIME     ?= 10s
BENCHTIME    ?= 1s
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages that hold fuzz targets (make fuzz runs every Fuzz* in each).
FUZZ_PKGS    ?= $(shell $(GO) list ./... 2>/dev/null)
# Packages whose tests make test-race runs under the race detector.
RACE_PKGS    ?= ./proxy/... ./bridge/iggy/ ./bridge/groups/ ./bridge/cluster/ ./embedded/...
# Length of the fault phase of make fault (scripts/fault), and its seed (empty: from the clock).
FAULT_DURATION ?= 30m
FAULT_SEED     ?=

.PHONY: all build run test test-race test-deps gen gen-check lint fuzz bench e2e fault fault-smoke clean

all: build

## build: compile the sidecar into bin/kafka-iggy
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kafka-iggy

## run: start the sidecar on 127.0.0.1:9092 with the embedded Iggy server
run: build
	./$(BIN) serve $(ARGS)

## test-deps: install what the tests need (idempotent)
test-deps:
	bash scripts/install-test-deps.sh

## test: install test dependencies, then run every test; the bridge's stack
##       tests run a second time on an embedded server of Iggy protocol 0.12,
##       and the concurrent packages a third time under the race detector
test: test-deps
	$(GO) test -count=1 -timeout 30m ./...
	KAFKA_IGGY_TEST_IGGY_PROTOCOL=0.12 $(GO) test -count=1 -timeout 10m ./bridge/
	$(MAKE) --no-print-directory test-race

## test-race: the tests of the packages where goroutines share state (front
##            door, Iggy client, groups, cluster, embedded server) under the
##            race detector (-race needs cgo and a C compiler; test-deps checks)
test-race:
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)

## gen: regenerate codec/iggy/*_gen.go from schema/
gen:
	$(GO) run ./gen -schema schema -out codec/iggy

## gen-check: fail when the generated code is not what schema/ produces
gen-check: gen
	@git diff --exit-code --stat -- codec/iggy || { echo "gen-check: codec/iggy is stale; run 'make gen' and commit" >&2; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- codec/iggy); \
	 if [ -n "$$untracked" ]; then echo "gen-check: untracked generated files: $$untracked" >&2; exit 1; fi

## lint: go vet + staticcheck
lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## fuzz: run every Fuzz* target for FUZZTIME each (go test -fuzz takes one target per run)
fuzz:
	@set -e; for pkg in $(FUZZ_PKGS); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: side by side: the sidecar, Apache Kafka, kfake and the direct Iggy path (scripts/bench);
##        steady-state runs, every figure twice interleaved, with spread and machine load;
##        rewrites docs/BENCHMARKS.md and docs/bench/ (bounded: 22-minute budget, loopback only)
bench:
	$(MAKE) --no-print-directory build
	$(GO) run ./scripts/bench -bin $(BIN) -out docs

## bench-go: the Go micro-benchmarks (codec, record mapping, client pool, proxy)
.PHONY: bench-go
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-smoke: the seconds-long version of make bench for CI (about 30 s of runs; no Kafka broker,
##              no Rust build; the report goes to a temporary directory)
.PHONY: bench-smoke
bench-smoke:
	$(MAKE) --no-print-directory build
	$(GO) run ./scripts/bench -smoke -bin $(BIN)

## e2e: end-to-end checks with clients we did not write (Rust SDK conformance, ...)
e2e: test-deps
	bash scripts/e2e.sh

## fault: the fault workload (scripts/fault): embedded-iggy on disk, three sidecars, idempotent
##        producers and a group while a seeded schedule kills, stops and rolls them (FAULT_DURATION,
##        default 30m, >= 50 faults); reads everything back, rewrites docs/FAULTS.md, fails on anomalies
fault: test-deps build
	$(GO) run ./scripts/fault -bin $(BIN) -duration $(FAULT_DURATION) $(if $(FAULT_SEED),-seed $(FAULT_SEED)) -out docs

## fault-smoke: the 2-3 minute version (3 faults of each kind; run by make e2e), no docs written
fault-smoke: test-deps build
	$(GO) run ./scripts/fault -smoke -bin $(BIN) $(if $(FAULT_SEED),-seed $(FAULT_SEED))

clean:
	rm -rf bin
