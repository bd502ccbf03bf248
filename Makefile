# codemode: Code Mode for ADK Go.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 30s
BENCHTIME ?= 2000x
# golangci-lint is pinned; `go run` builds it once into the build cache.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

# The repository's Go modules: the core, the ADK Go v1 adapters (adk) and
# the v2 ones (adk/v2), which cannot share a module (docs/adk-versions.md).
MODULES ?= . adk adk/v2

.PHONY: demo demo-v2 test lint fmt vet bench fuzz golden tidy build soak image generate

## demo: run the demo agent on ADK Go v1 (scripted model unless GOOGLE_API_KEY is set)
demo:
	cd adk && $(GO) run ./cmd/codemode-demo

## demo-v2: the same demo on ADK Go v2
demo-v2:
	cd adk/v2 && $(GO) run ./cmd/codemode-demo

## test: format check, vet, and every test of every module with the race detector
test: lint
	@set -e; for m in $(MODULES); do echo "== go test in $$m"; (cd $$m && $(GO) test -race -count=1 -shuffle=on -timeout 30m $(PKGS)); done
	@echo "== the jail's suite again, every session started cold (Backend.Cold)"
	CODEMODE_JAIL_START=cold $(GO) test -race -count=1 -shuffle=on -timeout 30m ./backend/jail/...
	cd deploy && $(GO) test -count=1 ./...

## lint: gofmt, the v2 adapters generated from v1, go vet (also for macOS, where the library must build) and golangci-lint (.golangci.yml), in every module
lint:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@set -e; for m in $(MODULES); do echo "== lint in $$m"; (cd $$m && $(GO) vet $(PKGS) && GOOS=darwin $(GO) vet $(PKGS) && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml $(PKGS)); done

## generate: write the ADK Go v2 adapters (adk/v2) from the v1 ones (adk)
generate:
	cd adk/v2 && $(GO) generate ./internal/fromv1

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
	cd adk && CODEMODE_SOAK_TURNS=$(SOAK_TURNS) $(GO) test -count=1 -timeout 60m -run '^TestSoak$$' -v ./plugin/codemode

## bench: the sandbox and catalog benchmarks (see docs/benchmarks.md)
bench:
	$(GO) test -run '^$$' -bench 'SessionColdStart|SessionStartPooled' -benchtime 60x ./backend/jail
	$(GO) test -run '^$$' -bench 'JailFloor' -benchtime 60x ./backend/jail
	cd adk && $(GO) test -run '^$$' -bench 'JailColdStartInADKProgram' -benchtime 60x ./plugin/codemode
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime $(BENCHTIME) ./backend/jail
	$(GO) test -run '^$$' -bench 'StartPython$$|BarePython' -benchtime 30x ./backend/jail
	$(GO) test -run '^$$' -bench ServePrint -benchtime $(BENCHTIME) ./sandboxserver/
	$(GO) test -run '^$$' -bench ChangedAfterBlock10k -benchtime 300x -benchmem ./sandboxserver/
	$(GO) test -run '^$$' -bench RenderCatalog1000 -benchtime 20x -benchmem ./render/
	$(GO) test -run '^$$' -bench ResumableRoundTrip -benchtime 5000x -count 3 ./transport/wsproto
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime 3000x -count 3 ./backend/remote
	$(GO) test -run '^$$' -bench 'SessionStart' -benchtime 30x -count 2 ./backend/remote
	cd adk && $(GO) test -run '^$$' -bench GitHub -benchtime 10x -benchmem ./toolset/openapi/
	$(GO) test -run '^$$' -bench 'SessionColdStart|SessionStartPooled' -benchtime 20x ./backend/docker
	$(GO) test -run '^$$' -bench 'WarmPrint|ToolCall' -benchtime $(BENCHTIME) ./backend/docker

## fuzz: each fuzz target for FUZZTIME
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./transport/wire
	$(GO) test -run '^$$' -fuzz '^FuzzRenderStubs$$' -fuzztime $(FUZZTIME) ./render
	cd adk && $(GO) test -run '^$$' -fuzz '^FuzzWorkspaceArtifactName$$' -fuzztime $(FUZZTIME) ./plugin/codemode
	cd adk && $(GO) test -run '^$$' -fuzz '^FuzzNeutralise$$' -fuzztime $(FUZZTIME) ./plugin/codemode
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSupMsg$$' -fuzztime $(FUZZTIME) ./sandboxserver
	$(GO) test -run '^$$' -fuzz '^FuzzParseToken$$' -fuzztime $(FUZZTIME) ./transport/wsproto
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFiles$$' -fuzztime $(FUZZTIME) ./transport/wsproto
	cd adk && $(GO) test -run '^$$' -fuzz '^FuzzNew$$' -fuzztime $(FUZZTIME) ./toolset/openapi
	$(GO) test -run '^$$' -fuzz '^FuzzReadFilesPreamble$$' -fuzztime $(FUZZTIME) ./transport/wsproto

## golden: rewrite golden files after an intended change (review the diff!)
golden:
	$(GO) test ./render/... -update

tidy:
	@set -e; for m in $(MODULES) deploy; do (cd $$m && $(GO) mod tidy -diff); done
