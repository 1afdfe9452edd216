# agentd — the commands a developer needs. `make run` and `make test` are the two in the README.
GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 2s

.PHONY: run build test generate lint spectral bench microbench fuzz clean

## run: start the service on :8080 with ./agentd.db (prints the bootstrap API key on first start)
run:
	$(GO) run ./cmd/agentd serve

## build: compile the single binary into ./bin/agentd
build:
	$(GO) build -o bin/agentd ./cmd/agentd

## test: every test, with the race detector (needs PostgreSQL and Redis on 127.0.0.1, see .ci/run)
test:
	$(GO) test -race -count=1 $(PKGS)

## generate: regenerate gen/ from openapi.yaml
generate:
	$(GO) generate ./gen/...

## lint: go vet and staticcheck
lint:
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

## spectral: lint openapi.yaml with the spectral:oas ruleset
spectral:
	npx -y @stoplight/spectral-cli@6 lint --fail-severity=error --ruleset .spectral.yaml openapi.yaml

## bench: agentd against a bare Echo server and an Echo+GORM+SQLite floor, in one run; writes bench/results/latest.md
# BENCH_FLAGS tunes it, e.g. BENCH_FLAGS='-dur 1s -conns 1,16' (go run ./bench -help).
BENCH_FLAGS ?=
bench: build
	$(GO) run ./bench -agentd bin/agentd $(BENCH_FLAGS)

## microbench: the Go micro-benchmarks of the hot paths (auth, validation, prompt, SSE, store)
microbench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

## fuzz: fuzz the agent and message body paths for a minute each (seeds in server/testdata/fuzz)
# A request through the whole stack costs about a millisecond, so minimizing
# each new input for the default 60s would stall the fuzzer: cap it at 100 runs.
FUZZTIME ?= 60s
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x
fuzz:
	$(GO) test ./server $(FUZZFLAGS) -fuzz '^FuzzAgentBody$$'
	$(GO) test ./server $(FUZZFLAGS) -fuzz '^FuzzMessageBody$$'

clean:
	rm -rf bin agentd.db agentd.db-wal agentd.db-shm
