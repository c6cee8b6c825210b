# kbkit developer targets. `make test` is what CI runs.
GO ?= go
FUZZTIME ?= 15s
# Where targets leave their reports: a directory of this checkout (ignored
# by git), so that two users or two checkouts never write the same file.
OUT ?= out

# The commit for `kbkit version` when the toolchain records none (a git
# worktree, GOFLAGS=-buildvcs=false); -v lists packages as they compile
# (the first build links Docker and OpenTelemetry: minutes on a cold cache).
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDFLAGS ?= -v -buildvcs=auto -ldflags '-X main.commit=$(COMMIT)'

.PHONY: test test-long test-busy vet bench fuzz demo build install conformance

# go vet, then go test of every package with an explicit -timeout that
# fits a loaded machine (a hang detector: 30m for the long packages, 10m
# for the others; scripts/test.sh, which prints each group's time).
# The tests that take minutes on their own (internal/longtest) are
# skipped here and run by make test-long; CI runs both.
test: vet
	KBKIT_SKIP_LONG=1 GO=$(GO) scripts/test.sh

# The long tests make test skips, on their own (scripts/test-long.sh).
test-long:
	GO=$(GO) scripts/test-long.sh

# make test while a CPU hog (stress-ng --cpu N, or scripts/cpuhog) keeps
# every core busy, ROUNDS times (default 2); the hog is ended on every
# path, and each round's time printed (scripts/test-busy.sh).
test-busy:
	GO=$(GO) MAKE=$(MAKE) scripts/test-busy.sh

vet:
	$(GO) vet ./...

build:
	$(GO) build $(BUILDFLAGS) -o bin/kbkit ./cmd/kbkit
	@echo "built bin/kbkit"

# kbkit for linux, darwin and windows on amd64 and arm64 (CGO_ENABLED=0,
# static) with SHA256SUMS, in $(OUT)/dist (scripts/dist.sh; TARGETS=...).
.PHONY: dist
dist:
	OUT=$(OUT) COMMIT=$(COMMIT) scripts/dist.sh

# Everything a release publishes, built offline (GOPROXY=off) into
# $(OUT)/release: the dist binaries, the image kbkit:VERSION saved as a
# tarball, the @kbkit/core tarball, RELEASE-NOTES.md cut from CHANGELOG.md
# and SHA256SUMS of them all (scripts/release.sh; VERSION is version.Kit).
# Cutting vX.Y.Z: write what it changes under CHANGELOG.md's [Unreleased],
# make cut VERSION=X.Y.Z, then the git commit and tag it prints, and make
# release (docs/ci.md, "Cutting a release").
.PHONY: release
release:
	OUT=$(OUT) COMMIT=$(COMMIT) scripts/release.sh

# Sets version.Kit and its copies (js/kbcore/package.json, the pins of
# README.md and docs/ci.md) to VERSION, turns [Unreleased] into its dated
# section, rewrites spec/ids.txt and runs the changelog and pin tests; it
# refuses a malformed or non-increasing VERSION or an empty [Unreleased].
# It prints the git commands to tag; it does not run them.
# VERSION=X.Y.Z-dev opens the work after a release (scripts/cut.sh).
.PHONY: cut
cut:
	@[ -n "$(VERSION)" ] || { echo "make cut VERSION=X.Y.Z (or X.Y.Z-dev)" >&2; exit 2; }
	GO=$(GO) scripts/cut.sh "$(VERSION)"

# Installs kbkit into $(go env GOBIN), else $(go env GOPATH)/bin.
install:
	$(GO) install $(BUILDFLAGS) ./cmd/kbkit
	@d=$$($(GO) env GOBIN); echo "installed $${d:-$$($(GO) env GOPATH)/bin}/kbkit"

# Benchmarks with the figures the issues name: ns/op and allocs/op per page
# size, the 100k/100 ratio per operation, and the tokenizer's MB/s.
bench:
	@mkdir -p $(OUT)
	$(GO) test -run='^$$' -bench='BenchmarkApply' -benchmem -count=5 ./kbcore/ | tee $(OUT)/bench-apply.txt
	@scripts/benchratio.sh $(OUT)/bench-apply.txt
	$(GO) test -run='^$$' -bench='BenchmarkTokenize' -benchmem -count=1 ./kbcore/token/
	$(GO) test -run='^$$' -bench='BenchmarkBetween' -benchmem -count=1 ./kbcore/rank/

# A short run of every fuzz target, each from its seed corpus in testdata.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzApply$$' -fuzztime=$(FUZZTIME) ./kbcore/
	$(GO) test -run='^$$' -fuzz='^FuzzTokenize$$' -fuzztime=$(FUZZTIME) ./kbcore/token/
	$(GO) test -run='^$$' -fuzz='^FuzzBetween$$' -fuzztime=$(FUZZTIME) ./kbcore/rank/
	$(GO) test -run='^$$' -fuzz='^FuzzParseEnvelope$$' -fuzztime=$(FUZZTIME) ./spec/schema/

# The convergence suite with faults on the local (or KBKIT_PG_*) Postgres.
conformance:
	$(GO) run ./cmd/kbkit conformance run --seeds 20 --faults --junit conformance-junit.xml

# The client row of docs/testing-clients.md (the example client alone, --faults) at 20
# seeds per bug of the example client: the checker named for each bug
# must fail in the majority of seeds, the correct client in none
# (sim/foreign_row_test.go; needs node and npm ci in examples/client-js).
.PHONY: client-row
client-row:
	@mkdir -p $(OUT)
	KBKIT_CLIENT_ROW=$${KBKIT_CLIENT_ROW:-20} KBKIT_REQUIRE_NODE=1 $(GO) test -count=1 -timeout 60m \
		-run '^TestClientRow$$' -v ./sim/ > $(OUT)/client-row.txt; rc=$$?; \
		grep -vE '^\s+foreign_row_test.go:[0-9]+: [a-z-]+ seed [0-9]+: failed ' $(OUT)/client-row.txt; exit $$rc

# A failing seed against every --broken-server variant, shrunk: the
# before/after table (steps/windows/pages/devices/faults/commands) and
# whether each shrunk replay fails again. ~10 minutes on 2 cores.
.PHONY: shrink-broken
shrink-broken:
	OUT=$(OUT) scripts/shrink-broken.sh

# kbkit in one minute: a server, windows of two devices editing at once
# (with faults) and the convergence checkers, a load run, the counters.
demo:
	OUT=$(OUT) scripts/demo.sh

.PHONY: loadgen-smoke bench-server bench-judge bench-page bench-scaling bench-floor

# A 10-second open-model run of the load generator against the embedded
# reference server (hot page, 16 windows, 100 commands/s); any error fails.
loadgen-smoke:
	@mkdir -p $(OUT)
	$(GO) run ./cmd/kbkit loadgen run --workload hot-page --editors 16 --rate 100 --duration 10s \
		--threshold 'errors==0' --json $(OUT)/loadgen-smoke.json --html $(OUT)/loadgen-smoke.html

# kbkit loadgen side by side with pgbench on one local PostgreSQL: the
# commands/s ÷ tps ratios, fan-out p99 ÷ commit p99 and the server's RSS
# per idle subscribed window (scripts/bench-server.sh; PHASE=seconds).
bench-server:
	OUT=$(OUT)/bench-server scripts/bench-server.sh

# A kept bench-server run judged again under this checkout's verdict,
# from its files (no load runs again; scripts/bench-judge.sh; STRICT as
# bench-server's).
bench-judge:
	scripts/bench-judge.sh $(OUT)/bench-server

# The benchmark page, generated from bench-server's results.json: the
# machine and its floors, the verdict, rates, fan-out, memory per window,
# each workload's saturation point (scripts/bench-page.sh; PAGE=file,
# default $(OUT)/bench-server/benchmarks.md).
PAGE ?=
bench-page:
	scripts/bench-page.sh $(OUT)/bench-server/results.json $(PAGE)

# kbkit serve's figures as the load grows, on one local PostgreSQL:
# many-pages at 1, 2, 4, 8, 16 writers, fan-out at 200, 2,000 and 10,000
# windows (20,000 echoes/s each), RSS per idle window at 5,000 and 20,000;
# a markdown table in OUT/bench-scaling/scaling.md (scripts/bench-scaling.sh;
# PHASE=seconds per point).
bench-scaling:
	OUT=$(OUT)/bench-scaling scripts/bench-scaling.sh

# This machine's floors under those figures: CPU per loopback TCP write
# and read (200 and 2,000 sockets, 20,000 messages/s of 200 bytes), the
# fdatasync rate, the CPU of an HTTP round trip, the latency of a
# loopback round trip between two processes (kbkit bench floor).
bench-floor:
	$(GO) run ./cmd/kbkit bench floor

.PHONY: failover

# A Postgres failover under load (kbkit pg failover-test): a primary with a
# synchronous standby, writers on a shared page and on pages of their own;
# mid-load the primary's machine is lost and the standby promoted. Prints
# acknowledged, found, lost, duplicated, the seconds writes failed and the
# time from the promotion to the first write and to every window
# converged; exit 1 if anything acknowledged was lost. TOPOLOGY=async-standby
# is the contrast (it loses acknowledged commands: exit 1 is its point).
# SCENARIO=split-brain keeps the old primary alive, cut off by a fault
# layer from the standby and from one instance, and prints beside these
# figures the commits only the old primary holds and how many of them a
# client was told of (0: the instances are fenced).
TOPOLOGY ?= sync-standby
SCENARIO ?=
failover:
	@mkdir -p $(OUT)
	$(GO) run ./cmd/kbkit pg failover-test --topology $(TOPOLOGY) $(if $(SCENARIO),--scenario $(SCENARIO)) --json $(OUT)/failover-$(TOPOLOGY)$(if $(SCENARIO),-$(SCENARIO)).json

.PHONY: partition

# Faults of the link between the server instances and Postgres under load
# (kbkit pg partition-test): a toxiproxy proxy on loopback drops every
# byte (blackhole, timeout), slows (latency), throttles (bandwidth),
# resets (reset_peer) or flaps it for HOLD, then heals. Prints per fault
# acknowledged, lost, duplicated, rejected, the time to the first answer
# and the longest call (bounded by the server's --db-timeout) and the
# recovery after the heal; exit 1 on any finding. FAULTS="blackhole latency"
# runs some.
HOLD ?= 6s
FAULTS ?=
partition:
	@mkdir -p $(OUT)
	$(GO) run ./cmd/kbkit pg partition-test --hold $(HOLD) $(foreach f,$(FAULTS),--fault $(f)) --json $(OUT)/partition.json

.PHONY: soak

# A long run (kbkit pg soak): mixed editing through faults of the link to
# Postgres, the server a process of its own; its and the generator's
# memory, goroutines, sockets and descriptors sampled and charted
# ($(OUT)/soak.html); exit 1 if any grew by more than 10 % after the
# warm-up (memory by its trend; growth is "not measurable here" with too
# few healthy samples or a starved sampler) or any acknowledged command
# was lost. scripts/ci-soak.sh runs DURATION=2m WARMUP=60s.
DURATION ?= 30m
WARMUP ?=
soak:
	@mkdir -p $(OUT)
	$(GO) build -o $(OUT)/kbkit-soak ./cmd/kbkit
	$(OUT)/kbkit-soak pg soak --duration $(DURATION) $(if $(WARMUP),--warmup $(WARMUP)) --json $(OUT)/soak.json --html $(OUT)/soak.html

.PHONY: k6 k6-image k6-smoke bench-k6

# k6 with kbkit's extension built in (k6/x/kbkit, the Go module in k6/):
# bin/k6-kbkit run examples/k6/hot-page.js. The first build compiles k6
# (minutes on a cold module cache), later ones are incremental. Static
# (CGO_ENABLED=0), so that the same binary runs in the image.
k6:
	cd k6 && CGO_ENABLED=0 $(GO) build -v -o ../bin/k6-kbkit ./cmd/k6-kbkit
	@echo "built bin/k6-kbkit"

# The k6-kbkit image, FROM scratch with no registry (scripts/k6-image.sh,
# scripts/image/k6.Dockerfile) on the Docker engine that answers.
K6_IMAGE ?= k6-kbkit:scratch
k6-image: k6
	scripts/k6-image.sh -t $(K6_IMAGE)

# The CI job: builds bin/k6-kbkit, runs examples/k6/hot-page.js for 10 s
# against kbkit serve, then two processes with complementary execution
# segments, then two containers of the image (scripts/ci-k6.sh; root, or
# a Docker engine that answers).
k6-smoke:
	bash scripts/ci-k6.sh

# kbkit loadgen and k6 with the extension on one workload against one
# kbkit serve, side by side: rate, latency, CPU per committed command
# (scripts/bench-k6.sh; RATE, EDITORS, PHASE=seconds, ROUNDS).
bench-k6: k6
	scripts/bench-k6.sh

.PHONY: wasm wasm-pack wasm-bench wasm-compare

# kbcore as WebAssembly for the @kbkit/core npm package (js/kbcore): a
# WASI reactor (GOOS=wasip1, go:wasmexport), a few seconds on a warm cache.
WASM ?= js/kbcore/kbcore.wasm
wasm:
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $(WASM) ./js/kbcore/wasm
	@echo "built $(WASM): $$(wc -c <$(WASM)) bytes, $$(gzip -9c $(WASM) | wc -c) gzipped"

# The npm tarball of @kbkit/core in OUT (npm pack; the types are copied from
# spec/types at pack time).
wasm-pack: wasm
	@mkdir -p $(OUT)
	cd js/kbcore && npm pack --pack-destination "$(abspath $(OUT))"

# Size, cold load in Node and the cost per call of edit-text on a 100- and a
# 10,000-node page: the package beside native Go (BenchmarkEditText) and
# the Node example adapter's JavaScript, in one table (scripts/wasm-bench.sh).
wasm-bench: wasm
	OUT=$(OUT) scripts/wasm-bench.sh

# GOOS=wasip1 (shipped) against GOOS=js on the same calls: size, start-up,
# the toll of one call, apply on 100 nodes (js/kbcore/bench/compare.mjs).
wasm-compare: wasm
	@mkdir -p $(OUT)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o $(OUT)/kbcore-js.wasm ./js/kbcore/wasm
	node js/kbcore/bench/compare.mjs $(OUT)/kbcore-js.wasm "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js"
