# codemode: Code Mode for ADK Go.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 30s
BENCHTIME ?= 2000x
# golangci-lint is pinned; `go run` builds it once into the build cache.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

# The Go modules built, linted and tested together: the root (the core and
# the ADK Go v2 adapters) and the ADK Go v1 adapters (adkv1), which cannot
# share a module with v2 (docs/adk-versions.md). adkv1 builds against the
# root in this tree through adkv1/go.work. deploy, a module of its own, is
# tested by make test and tidied by make tidy.
MODULES ?= . adkv1

.PHONY: demo test lint fmt vet bench evidence fuzz golden tidy build soak image generate release

## demo: run the demo agent (ADK Go v2; scripted model unless GOOGLE_API_KEY is set)
demo:
	$(GO) run ./cmd/codemode-demo

## test: format check, vet, and every test of every module with the race detector
test: lint
	@set -e; for m in $(MODULES); do echo "== go test in $$m"; (cd $$m && $(GO) test -race -count=1 -shuffle=on -timeout 30m $(PKGS)); done
	@echo "== the jail's suite again, every session started cold (Backend.Cold)"
	CODEMODE_JAIL_START=cold $(GO) test -race -count=1 -shuffle=on -timeout 30m ./backend/jail/...
	cd deploy && $(GO) test -count=1 ./...

## lint: gofmt, go vet (also for macOS, where the library must build) and golangci-lint (.golangci.yml), in the root and adkv1 modules
lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@set -e; for m in $(MODULES); do echo "== lint in $$m"; (cd $$m && $(GO) vet $(PKGS) && GOOS=darwin $(GO) vet $(PKGS) && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml $(PKGS)); done

## generate: build the sandbox program embedded in internal/host/sandboxbin, and write the ADK Go v1 adapters (adkv1) from the v2 ones at the top level
generate:
	$(GO) generate ./internal/host/sandboxbin
	cd adkv1 && $(GO) generate ./internal/fromv2

## image: build the sandbox image codemode-sandbox:latest (images/README.md); with no BASE_IMAGE, on a Debian base made by debootstrap
image:
	images/sandbox/build.sh

fmt:
	gofmt -w .

build:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) build $(PKGS)); done

## soak: 1,000 turns through a real runner and the jail with injected faults (make test runs 150)
SOAK_TURNS ?= 1000
soak:
	CODEMODE_SOAK_TURNS=$(SOAK_TURNS) $(GO) test -count=1 -timeout 60m -run '^TestSoak$$' -v ./plugin/codemode

## bench: the sandbox and catalog benchmarks (see docs/benchmarks.md)
bench:
	$(GO) test -run '^$$' -bench 'SessionColdStart|SessionStartPooled' -benchtime 60x ./backend/jail
	$(GO) test -run '^$$' -bench 'JailFloor' -benchtime 60x ./backend/jail
	$(GO) test -run '^$$' -bench 'JailColdStartInADKProgram' -benchtime 60x ./plugin/codemode
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime $(BENCHTIME) ./backend/jail
	$(GO) test -run '^$$' -bench 'StartPython$$|BarePython' -benchtime 30x ./backend/jail
	$(GO) test -run '^$$' -bench ServePrint -benchtime $(BENCHTIME) ./internal/both/server/
	$(GO) test -run '^$$' -bench ChangedAfterBlock10k -benchtime 300x -benchmem ./internal/sandbox/supervisor/
	$(GO) test -run '^$$' -bench RenderCatalog1000 -benchtime 20x -benchmem ./render/
	$(GO) test -run '^$$' -bench ResumableRoundTrip -benchtime 5000x -count 3 ./internal/protocol/wsproto
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime 3000x -count 3 ./backend/remote
	$(GO) test -run '^$$' -bench 'SessionStart' -benchtime 30x -count 2 ./backend/remote
	$(GO) test -run '^$$' -bench GitHub -benchtime 10x -benchmem ./openapi/
	$(GO) test -run '^$$' -bench 'SessionColdStart|SessionStartPooled' -benchtime 20x ./backend/docker
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime $(BENCHTIME) ./backend/docker

## evidence: what Code Mode saves against direct tool calling: every task shape under direct tools, Code Mode and hybrid, answers checked; the table to stdout and evidence.json (docs/evidence.md)
EVIDENCE_JSON ?= evidence.json
evidence:
	$(GO) run ./cmd/codemode evidence --json $(EVIDENCE_JSON)

## fuzz: every fuzz target of every module, each for FUZZTIME (internal/tooling/maketargets holds this list to the tree)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCompileValidator$$' -fuzztime $(FUZZTIME) ./schema
	$(GO) test -run '^$$' -fuzz '^FuzzJSONString$$' -fuzztime $(FUZZTIME) ./render
	$(GO) test -run '^$$' -fuzz '^FuzzRenderStubs$$' -fuzztime $(FUZZTIME) ./render
	$(GO) test -run '^$$' -fuzz '^FuzzWorkspaceArtifactName$$' -fuzztime $(FUZZTIME) ./internal/host/engine
	$(GO) test -run '^$$' -fuzz '^FuzzReadJournal$$' -fuzztime $(FUZZTIME) ./internal/host/engine
	$(GO) test -run '^$$' -fuzz '^FuzzNeutralise$$' -fuzztime $(FUZZTIME) ./internal/host/engine
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./openapi
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/protocol/wire
	$(GO) test -run '^$$' -fuzz '^FuzzServeConn$$' -fuzztime $(FUZZTIME) ./egress
	$(GO) test -run '^$$' -fuzz '^FuzzUpstreamResponse$$' -fuzztime $(FUZZTIME) ./egress
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMessage$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzParseResume$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzParseToken$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFiles$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzReadFilesPreamble$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzParseEgress$$' -fuzztime $(FUZZTIME) ./internal/protocol/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMsg$$' -fuzztime $(FUZZTIME) ./internal/sandbox/supervisor
	$(GO) test -run '^$$' -fuzz '^FuzzReadStatus$$' -fuzztime $(FUZZTIME) ./backend/jail

## golden: rewrite every golden file after an intended change (review the diff!): each package with an -update flag (the API listing in api/ too), then the generated adkv1 copies
golden:
	$(GO) test ./render ./cmd/codemode ./cmd/codemode-demo ./internal/both/server ./toolset/openapi/e2e ./internal/tooling/apicheck -update
	$(MAKE) generate

## tidy: check that every go.mod and go.sum is tidy (TIDY= to tidy them); adkv1's against the root in this tree
# Tidied against the tree, adkv1/go.sum loses the root module's lines,
# which make release wrote (its hashes as the module proxy serves them), so
# they are put back in their place before comparing or copying.
TIDY ?= -diff
ROOT_MODULE := github.com/adk-codemode/codemode
tidy:
	@set -e; for m in . deploy; do (cd $$m && $(GO) mod tidy $(TIDY)); done
	@set -e; tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; cp -R adkv1 "$$tmp/"; rm -f "$$tmp/adkv1/go.work" "$$tmp/adkv1/go.work.sum"; \
		(cd "$$tmp/adkv1" && $(GO) mod edit -replace $(ROOT_MODULE)=$(CURDIR) && GOWORK=off $(GO) mod tidy && $(GO) mod edit -dropreplace $(ROOT_MODULE)); \
		LC_ALL=C awk -v m=$(ROOT_MODULE) 'FILENAME == ARGV[1] { if ($$1 == m) own = own $$0 "\n"; next } own != "" && $$1 > m { printf "%s", own; own = "" } $$1 != m { print } END { printf "%s", own }' \
			adkv1/go.sum "$$tmp/adkv1/go.sum" > "$$tmp/go.sum"; mv "$$tmp/go.sum" "$$tmp/adkv1/go.sum"; \
		if [ -z "$(TIDY)" ]; then cp "$$tmp/adkv1/go.mod" "$$tmp/adkv1/go.sum" adkv1/; \
		else diff -u adkv1/go.mod "$$tmp/adkv1/go.mod" && diff -u adkv1/go.sum "$$tmp/adkv1/go.sum"; fi

## release: prepare a release of every module at VERSION (make release VERSION=v0.3.0); prints the commit and the tags to make, and pushes nothing
release:
	$(GO) run ./internal/tooling/release -version "$(VERSION)"
