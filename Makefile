# kbkit developer targets. `make test` is what CI runs.
GO ?= go
FUZZTIME ?= 15s

# The commit for `kbkit version` when the toolchain records none (a git
# worktree, GOFLAGS=-buildvcs=false); -v lists packages as they compile
# (the first build links Docker and OpenTelemetry: ~2 minutes on 2 cores).
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDFLAGS ?= -v -buildvcs=auto -ldflags '-X main.commit=$(COMMIT)'

.PHONY: test vet bench fuzz demo build install conformance

test: vet
	$(GO) test ./...

vet:
	$(GO) vet ./...

build:
	$(GO) build $(BUILDFLAGS) -o bin/kbkit ./cmd/kbkit
	@echo "built bin/kbkit"

# Installs kbkit into $(go env GOBIN), else $(go env GOPATH)/bin.
install:
	$(GO) install $(BUILDFLAGS) ./cmd/kbkit
	@d=$$($(GO) env GOBIN); echo "installed $${d:-$$($(GO) env GOPATH)/bin}/kbkit"

# Benchmarks with the figures the issues name: ns/op and allocs/op per page
# size, the 100k/100 ratio per operation, and the tokenizer's MB/s.
bench:
	$(GO) test -run='^$$' -bench='BenchmarkApply' -benchmem -count=5 ./kbcore/ | tee /tmp/kbkit-bench-apply.txt
	@scripts/benchratio.sh /tmp/kbkit-bench-apply.txt
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

# Runs the built-in spec against the reference reducer.
demo:
	$(GO) run ./cmd/kbkit spec run -v

.PHONY: loadgen-smoke bench-server

# A 10-second open-model run of the load generator against the embedded
# reference server (hot page, 16 windows, 100 commands/s); any error fails.
loadgen-smoke:
	$(GO) run ./cmd/kbkit loadgen run --workload hot-page --editors 16 --rate 100 --duration 10s \
		--threshold 'errors==0' --json /tmp/kbkit-loadgen-smoke.json --html /tmp/kbkit-loadgen-smoke.html

# kbkit loadgen side by side with pgbench on one local PostgreSQL: the
# commands/s ÷ tps ratios, fan-out p99 ÷ commit p99 and the server's RSS
# per idle subscribed window (scripts/bench-server.sh; PHASE=seconds).
bench-server:
	scripts/bench-server.sh

.PHONY: k6 k6-smoke bench-k6

# k6 with kbkit's extension built in (k6/x/kbkit, the Go module in k6/):
# bin/k6-kbkit run examples/k6/hot-page.js. The first build compiles k6
# (~2 minutes on 2 cores), later ones are incremental.
k6:
	cd k6 && $(GO) build -v -o ../bin/k6-kbkit ./cmd/k6-kbkit
	@echo "built bin/k6-kbkit"

# The CI job: builds bin/k6-kbkit, runs examples/k6/hot-page.js for 10 s
# against kbkit serve, then two processes with complementary execution
# segments (scripts/ci-k6.sh).
k6-smoke:
	bash scripts/ci-k6.sh

# kbkit loadgen and k6 with the extension on one workload against one
# kbkit serve, side by side: rate, latency, CPU per committed command
# (scripts/bench-k6.sh; RATE, EDITORS, PHASE=seconds, ROUNDS).
bench-k6: k6
	scripts/bench-k6.sh
