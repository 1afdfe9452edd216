# agentd — the commands a developer needs. `make run` and `make test` are the two in the README.
GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 2s

.PHONY: run build setup test flake reliability generate interop lint spectral ts-check sdk-check web web-check web-test bench microbench fuzz clean

# TS_CLIENT type-checks a TypeScript client generated from openapi.yaml; its
# schema.d.ts is committed like gen/.
TS_CLIENT = clients/typescript
# HEY_API type-checks an SDK that a second generator, @hey-api/openapi-ts,
# makes from openapi.yaml; the SDK is generated fresh into its sdk/ (git-ignored).
HEY_API   = clients/hey-api
NPM       ?= npm

## run: start the service on :8080 with ./agentd.db (prints the bootstrap API key on first start)
run:
	$(GO) run ./cmd/agentd serve

## build: compile the single binary into ./bin/agentd
build:
	$(GO) build -o bin/agentd ./cmd/agentd

## setup: install (apt-get, sudo when not root) and start what the tests need: PostgreSQL, Redis, nginx, chromium, node and interop/; a no-op when all is there
# AGENTD_SETUP=off skips it; outside CI what cannot be had is reported and
# the tests that need it skip (with CI set, it fails instead).
setup:
	@.ci/setup

## test: every test, with the race detector, after make setup (deploy/check, the manifests' own module, too), and the console's unit tests (make web-test)
test: setup
	@$(MAKE) --no-print-directory web-test
	$(GO) test -race -count=1 -timeout 25m $(PKGS)
	cd deploy/check && $(GO) test -count=1 ./...

## flake: every test 5 times at -cpu 1 and 2 with the race detector, to catch tests that depend on timing (after make setup, as make test)
# FLAKE_TIMEOUT bounds each package's test binary (go test runs as many
# packages at once as there are CPUs). The reliability tests stay skipped
# unless AGENTD_RELIABILITY is set.
FLAKE_COUNT   ?= 5
FLAKE_TIMEOUT ?= 25m
flake: setup
	$(GO) test -race -count=$(FLAKE_COUNT) -cpu 1,2 -timeout $(FLAKE_TIMEOUT) $(PKGS)

## reliability: kill agentd with SIGKILL under load, hostile and slow clients, then every fuzz target for RELIABILITY_FUZZTIME
# The budget knobs (defaults fit CI, about 5 minutes in all): AGENTD_CRASH_KILLS
# (20 per backend), AGENTD_CRASH_WINDOW (1s, the longest load before a kill),
# AGENTD_HOSTILE_DURATION (3s of measuring per hostile load), RELIABILITY_FUZZTIME
# (20s per fuzz target). No -race: the load is the point, make test has the race detector.
RELIABILITY_TESTS    = ^(TestCrashConsistency|TestHostileClients)$$
RELIABILITY_FUZZTIME ?= 20s
reliability: setup
	AGENTD_RELIABILITY=1 $(GO) test -count=1 -timeout 20m -v -run '$(RELIABILITY_TESTS)' ./cmd/agentd
	@set -e; for file in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "+ fuzz $$target in $$(dirname $$file) for $(RELIABILITY_FUZZTIME)"; \
			GO=$(GO) .ci/fuzz $$(dirname $$file) $$target $(RELIABILITY_FUZZTIME); \
		done; \
	done

## generate: regenerate gen/ and clients/typescript/schema.d.ts from openapi.yaml (needs npm)
generate: $(TS_CLIENT)/node_modules/.package-lock.json
	$(GO) generate ./gen/...
	cd $(TS_CLIENT) && $(NPM) run --silent generate

# npm ci writes node_modules/.package-lock.json: reinstall when the lock changes.
$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && $(NPM) ci --no-audit --no-fund

## ts-check: the committed schema.d.ts is what openapi.yaml generates, and check.ts (every operation through openapi-fetch) type-checks
ts-check: $(TS_CLIENT)/node_modules/.package-lock.json
	cd $(TS_CLIENT) && $(NPM) run --silent generate
	@git diff --exit-code --stat -- $(TS_CLIENT)/schema.d.ts || \
		{ echo "$(TS_CLIENT)/schema.d.ts differs from what openapi.yaml generates: run 'make generate' and commit it" >&2; exit 1; }
	@git ls-files --error-unmatch $(TS_CLIENT)/schema.d.ts >/dev/null || \
		{ echo "$(TS_CLIENT)/schema.d.ts is not committed" >&2; exit 1; }
	cd $(TS_CLIENT) && $(NPM) run --silent check
	clients/operations-called $(TS_CLIENT)/check.ts

$(HEY_API)/node_modules/.package-lock.json: $(HEY_API)/package-lock.json
	cd $(HEY_API) && $(NPM) ci --no-audit --no-fund

## sdk-check: a second generator, @hey-api/openapi-ts, makes an SDK of openapi.yaml without complaint, and check.ts (every operation through it) type-checks
sdk-check: $(HEY_API)/node_modules/.package-lock.json
	clients/operations-called $(HEY_API)/check.ts sdk.
	cd $(HEY_API) && $(NPM) run --silent generate && $(NPM) run --silent check

## interop: install the third-party programs the tests run against agentd (the MCP reference server, the official MCP and A2A client SDKs, the openai client and the AI SDK's OpenAI provider; needs npm)
interop: interop/node_modules/.package-lock.json

interop/node_modules/.package-lock.json: interop/package-lock.json
	cd interop && $(NPM) ci --no-audit --no-fund

# WEB is the console and /docs: sources in web/src and web/static, built
# into web/dist (committed, embedded by the Go package web).
WEB = web

# npm packages may carry Go sources (eslint's flatted does): a go.mod at the
# root of node_modules makes it a module of its own, which ./... leaves out,
# so go test, vet and staticcheck see only agentd's code.
$(WEB)/node_modules/.package-lock.json: $(WEB)/package-lock.json
	cd $(WEB) && $(NPM) ci --no-audit --no-fund && printf 'module node_modules\n' > node_modules/go.mod

## web: type-check the console and rebuild web/dist, reporting its gzipped size (budget 150 KB; needs npm; make run does not)
web: $(WEB)/node_modules/.package-lock.json
	cd $(WEB) && $(NPM) run --silent check && $(NPM) run --silent build

## web-check: the console's sources pass eslint and are prettier-formatted, and the committed web/dist is what a fresh build of web/ makes
web-check: web
	cd $(WEB) && $(NPM) run --silent lint && $(NPM) run --silent format:check
	@git diff --exit-code --stat -- $(WEB)/dist || \
		{ echo "$(WEB)/dist differs from a fresh build: run 'make web' and commit it" >&2; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- $(WEB)/dist); [ -z "$$untracked" ] || \
		{ echo "'make web' made files not in git: $$untracked" >&2; exit 1; }

## web-test: the console's unit tests (vitest, web/src/*.test.ts[x]: api.ts's retries, SSE reader and errors, markdown, the busy guard, the provider notice, the playground's updates, the cron evaluator and the schedule calls, money and the spend bars, the agent form's budget); without npm they are skipped with a line, except in CI
# Like the tests .ci/setup cannot serve: skipped with a line where the tool
# is missing, a failure when CI is set.
web-test:
	@if command -v $(NPM) >/dev/null; then \
		$(MAKE) --no-print-directory $(WEB)/node_modules/.package-lock.json && cd $(WEB) && $(NPM) run --silent test; \
	elif [ -n "$$CI" ]; then \
		echo "FAIL: web unit tests: npm not found" >&2; exit 1; \
	else \
		echo "SKIP: web unit tests: npm not found"; \
	fi

## lint: go vet and staticcheck
lint:
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

## spectral: lint openapi.yaml with the spectral:oas ruleset
spectral:
	npx -y @stoplight/spectral-cli@6 lint --fail-severity=error --ruleset .spectral.yaml openapi.yaml

## bench: agentd against a bare Echo server and an Echo+GORM floor on SQLite (BENCH_DB=postgres: on PostgreSQL), in one run; writes bench/results/latest.md (latest-postgres.md)
# BENCH_DB=postgres puts agentd and the floor on fresh databases of the -recall-pg server, dropped at the end.
# BENCH_FLAGS tunes it, e.g. BENCH_FLAGS='-dur 1s -conns 1,16' (go run ./bench -help).
# BENCH_FLAGS='-only leases' measures the connection leases alone (10,000 bots,
# 3 replicas, SQLite and PostgreSQL; 5 to 15 minutes) and updates its section.
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
	rm -rf bin agentd.db agentd.db-wal agentd.db-shm $(TS_CLIENT)/node_modules $(HEY_API)/node_modules $(HEY_API)/sdk $(WEB)/node_modules
