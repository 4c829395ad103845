# Developer entry points. `make test` is what CI runs (scripts/test.sh).
GO ?= go
BIN := bin

.PHONY: all build test fmt vet lint proto proto-check crds chart-check tools clean help

all: build

## build: build the sluice binary into bin/
build:
	$(GO) build -trimpath -o $(BIN)/sluice ./cmd/sluice

## test: the full check CI runs: gofmt, vet, staticcheck, proto staleness, go test -race
test:
	scripts/test.sh

## fmt: format every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## vet: go vet
vet:
	$(GO) vet ./...

## lint: staticcheck and buf lint
lint: tools
	"$$(scripts/tools.sh path staticcheck)" ./...
	PATH="$$(scripts/tools.sh bindir):$$PATH" sh -c 'cd proto && buf lint'

## proto: regenerate the Go code for proto/ and the Python client stubs (commit the result)
proto:
	scripts/gen-proto.sh gen

## proto-check: fail if the committed generated code is stale
proto-check:
	scripts/gen-proto.sh check

## crds: regenerate deepcopy and CRD manifests from operator/api (commit the result)
crds:
	scripts/gen-crds.sh gen

## chart-check: helm lint, and the chart and deploy/ applied (dry-run) to a real kube-apiserver
chart-check:
	scripts/check-chart.sh

## tools: build the pinned developer tools (and the Kubernetes test binaries) into ~/.cache/sluice-tools
tools:
	scripts/tools.sh install
	scripts/k8s-tools.sh >/dev/null

clean:
	rm -rf $(BIN)

help:
	@grep -E '^## ' Makefile | sed 's/^## /  /'
