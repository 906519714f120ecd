# sandboxd: `make run` starts the service, `make test` runs every test.
# Both bring up what they need: a Docker daemon (installed and started when
# missing and run as root on Debian) and the sandbox images (built offline,
# cached until their inputs change).

SHELL   := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
IMAGE   ?= sandbox-python:3.11
DATA_IMAGE ?= sandbox-python-data:3.11
NODE_IMAGE ?= sandbox-node:24
STATICCHECK ?= v0.8.2
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Where an image build says it is running (build.sh); the service reads it
# (runtime.build_status_dir in config.yaml).
export BUILD_STATUS_DIR ?= $(CURDIR)/data/build

.PHONY: all build supervisor docker image image-data image-node run test test-unit lint interop-deps postgres chromium bench demo soak fuzz fleet clean

all: build

build: ## build bin/sandboxd
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/sandboxd ./cmd/sandboxd

# supervisor is PID 1 of the sandbox images: static (no libc in the image
# needs to match it) and reproducible (its hash is the image's input).
supervisor: ## build bin/sandbox-supervisor, the images' static PID 1
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "-s -w" -o bin/sandbox-supervisor ./cmd/sandbox-supervisor

docker: ## make sure a Docker daemon answers (installs and starts one as root)
	@scripts/docker-up.sh

image: docker ## build the sandbox image offline (skipped when up to date)
	@images/build.sh $(IMAGE) python

# image-data costs one `docker image inspect` when its inputs are unchanged,
# so test depends on it (in the foreground); a cold build takes minutes (see
# images/build.sh), so run builds it in the background instead (scripts/run.sh).
image-data: docker ## build the data image (numpy, pandas, matplotlib, scipy) offline (skipped when up to date)
	@images/build.sh $(DATA_IMAGE) python/data

# image-node needs the supervisor's binary; like image-data it is test's
# prerequisite and run builds it in the background.
image-node: docker supervisor ## build the Node.js 24 image (Debian forky) offline (skipped when up to date)
	@images/build.sh $(NODE_IMAGE) node

# run serves as soon as the python environment can run: the data image builds
# in the background meanwhile (its runs answer 503 with Retry-After until it
# is ready), and the time of each step is printed before serving.
run: ## start the service on :8080 with its three environments (free mode unless config.yaml says otherwise)
	@GO='$(GO)' LDFLAGS='$(LDFLAGS)' IMAGE='$(IMAGE)' DATA_IMAGE='$(DATA_IMAGE)' NODE_IMAGE='$(NODE_IMAGE)' scripts/run.sh

interop-deps: ## the official x402 client, facilitator and anvil from npm
	@test/interop/setup.sh

postgres: ## Debian's PostgreSQL binaries (installed when missing); tests start throwaway servers
	@scripts/pg.sh install

chromium: ## Debian's chromium (installed when missing, as root); the browser tests drive it headless
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	    echo "chromium is missing: install Debian's chromium (apt-get install chromium) as root" >&2; exit 1; fi; \
	  echo "installing chromium (apt-get)" >&2; apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# lint fails on what review would refuse: vet's findings, a go.mod that
# `go mod tidy` would change, and staticcheck's (the version pinned here).
lint: ## go vet, go mod tidy -diff and staticcheck
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) ./...

test: build lint image image-data image-node interop-deps postgres chromium ## every test: unit, integration (Docker, PostgreSQL), interop (x402 + anvil), the page in chromium
	SANDBOXD_INTEGRATION=1 SANDBOXD_INTEROP=1 SANDBOXD_FAULTS=1 $(GO) test -p 1 -count=1 -timeout 40m ./...

test-unit: ## only the tests that need neither Docker nor npm (the gates off, even under CI=true)
	env -u CI -u SANDBOXD_INTEGRATION -u SANDBOXD_INTEROP -u SANDBOXD_FAULTS $(GO) test -count=1 ./...

bench: build image image-data image-node interop-deps ## measure latency and throughput against docker run and the engine's ceiling; paid calls on anvil
	$(GO) run ./test/bench $(BENCHFLAGS)

demo: build image interop-deps ## the whole paid flow, offline: anvil, the service on chain, `sandboxd call`
	scripts/demo.sh

soak: build image ## 2,000 mixed hostile requests at concurrency 16: correct answers, no 5xx, no leaks, memory
	$(GO) run ./test/soak $(SOAKFLAGS)

fuzz: ## every fuzz target for FUZZTIME (default 60s) each
	FUZZTIME=$(or $(FUZZTIME),60s) test/scripts/fuzz.sh

fleet: build image ## three replicas and a PostgreSQL ledger on this machine, for a try-out (Ctrl-C stops)
	scripts/fleet.sh

clean:
	rm -rf bin
