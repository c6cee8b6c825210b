# kbkit developer targets. `make test` is what CI runs.
GO ?= go
FUZZTIME ?= 15s

.PHONY: test vet bench fuzz demo build conformance

test: vet
	$(GO) test ./...

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/kbkit ./cmd/kbkit

# Benchmarks with the figures the issues name: ns/op and allocs/op per page
# size, the 100k/100 ratio per operation, and the tokenizer's MB/s.
bench:
	$(GO) test -run='^$$' -bench='BenchmarkApply' -benchmem -count=1 ./kbcore/ | tee /tmp/kbkit-bench-apply.txt
	@scripts/benchratio.sh /tmp/kbkit-bench-apply.txt
	$(GO) test -run='^$$' -bench='BenchmarkTokenize' -benchmem -count=1 ./kbcore/token/
	$(GO) test -run='^$$' -bench='BenchmarkBetween' -benchmem -count=1 ./kbcore/rank/

# A short run of every fuzz target, each from its seed corpus in testdata.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzApply$$' -fuzztime=$(FUZZTIME) ./kbcore/
	$(GO) test -run='^$$' -fuzz='^FuzzTokenize$$' -fuzztime=$(FUZZTIME) ./kbcore/token/
	$(GO) test -run='^$$' -fuzz='^FuzzBetween$$' -fuzztime=$(FUZZTIME) ./kbcore/rank/

# The convergence suite with faults on the local (or KBKIT_PG_*) Postgres.
conformance:
	$(GO) run ./cmd/kbkit conformance run --seeds 20 --faults --junit conformance-junit.xml

# Runs the built-in spec against the reference reducer.
demo:
	$(GO) run ./cmd/kbkit spec run -v
