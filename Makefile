# svcd — build, run and test. `make run` and `make test` are the two set-up
# commands README.md promises on a fresh machine.
GO       ?= go
BIN      := bin
LDFLAGS  := -X github.com/svcd/svcd/shared/version.Commit=$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The commit's time, not the clock (issue 21): svcd version and GET /version show it.
LDFLAGS  += -X github.com/svcd/svcd/shared/version.BuildDate=$(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
FUZZTIME ?= 10s

.PHONY: build run test lint fuzz proto bench clean tools chaos dist dist-check

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/svcd ./cmd/svcd
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/svcctl ./cmd/svcctl

# Single node on 127.0.0.1:4317, data in ./data (the embedded default).
run: build
	./$(BIN)/svcd serve

# The pinned Codex CLI the agentd tests drive (project-local, npm registry).
CODEX_VERSION ?= 0.169.0
tools:
	@test -x .tools/codex/node_modules/.bin/codex || \
		npm install --no-audit --no-fund --prefix .tools/codex @openai/codex@$(CODEX_VERSION)

test: lint tools
	node --test --test-reporter=dot extension/test/
	$(GO) test -race -count=1 -timeout 20m ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Runs every fuzz target briefly (FUZZTIME each) on top of its committed seed corpus.
fuzz:
	./scripts/fuzz $(FUZZTIME)

# Regenerates the committed gRPC code from shared/proto/*.proto.
# Needs protoc (Debian: protobuf-compiler), protoc-gen-go and protoc-gen-go-grpc.
proto:
	protoc --proto_path=shared/proto --go_out=shared/proto --go_opt=paths=source_relative \
		--go-grpc_out=shared/proto --go-grpc_opt=paths=source_relative shared/proto/*.proto

bench:
	./scripts/bench

# Reproducible release archives in dist/ (docs/deploy.md); dist-check builds
# them twice and compares the checksums (CI runs it: four static builds are
# too slow for make test).
dist:
	./scripts/dist dist

dist-check:
	./scripts/dist-check

clean:
	rm -rf $(BIN) dist

# Chaos and soak (issue 23): a real two-node cluster with a witness under
# mixed load and a seeded fault schedule, checked at the end (e2e/chaos).
# CHAOS_DURATION (default 10m) and CHAOS_SEED (random when unset, printed)
# replay a run; the last line is "N ops, K faults, M invariants broken".
CHAOS_DURATION ?= 10m
chaos:
	@summary=$$(mktemp); \
	CHAOS=1 CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) CHAOS_SUMMARY=$$summary \
		$(GO) test -count=1 -v -timeout 90m -run '^TestChaos$$' ./e2e/chaos/; rc=$$?; \
	if test -s $$summary; then cat $$summary; else echo "the chaos run ended before its checkers"; fi; rm -f $$summary; exit $$rc

# Issue 31: the shipped unit on a Debian 12 guest in QEMU (TCG), checked
# from inside by e2e/vm/guestcheck (scripts/vm/run: root; the guest image is
# built from Debian's packages and cached in /var/cache/svcd-vm), and the
# unit tests of shared/, raftstore/ and workers/hostops/sandbox/ built for arm64 and
# run under qemu-user (scripts/test-arm64).
.PHONY: test-vm test-arm64
test-vm:
	./scripts/vm/run

test-arm64:
	./scripts/test-arm64
