# Make targets for gardener-extension-firewall. Every target a user touches is
# documented in docs/development/make-targets.md.

SHELL := /usr/bin/env bash -o pipefail

REPO_ROOT          := $(shell pwd)
# Tools are cached outside the clone, like the control-plane binaries, so fresh
# clones and CI reuse them; versioned file names make a pin change rebuild.
TOOLS_BIN          ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gardener-extension-firewall/tools
GOLANGCI_LINT_VERSION ?= v2.11.4
GOLANGCI_LINT      := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
CONTROLLER_GEN_VERSION ?= v0.22.0
CONTROLLER_GEN     := $(TOOLS_BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GO_TEST_FLAGS      ?= -timeout 30m
# Root runs the network-namespace tests; they then fail instead of skipping
# when something they need is missing, so CI (root) cannot silently skip them.
ifeq ($(shell id -u),0)
export REQUIRE_ROOT_TESTS ?= true
endif

.PHONY: all
all: check test

# The control-plane binaries (kube-apiserver, kube-controller-manager, etcd)
# are built from the module proxy once and cached outside the repository.
.PHONY: control-plane
control-plane:
	@hack/build-control-plane.sh

# A brief run of every fuzz target (hack/fuzz.sh, FUZZ_SMOKE_TIME executions each) follows
# the unit and integration suites. The end-to-end suites (three control planes,
# the agent in network namespaces) run after the others, not beside them, to
# keep two cores from being oversubscribed. They run even when an earlier suite
# failed: every result is reported and the target fails if any did.
# hack/test-prereqs.sh installs what the root suites need (as root) or says
# what they would need. At the end the target fails when the suites left
# anything behind that was not there before (hack/leftovers.sh: processes,
# network namespaces, the lab's tap, temporary folders), naming it. A failed run ends
# with the first failures' messages (hack/test-failures.sh).
.PHONY: test
test:
	@hack/test-prereqs.sh
	@assets="$$(hack/build-control-plane.sh)" || exit 1; failed=""; \
	lab=""; if [ "$$(id -u)" = 0 ]; then lab="$$(hack/build-lab.sh)" || exit 1; fi; \
	snap="$$(mktemp)"; hack/leftovers.sh snapshot "$$snap"; log="$$(mktemp)"; \
	KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /test/e2e/) 2>&1 | tee -a "$$log" || failed="$$failed unit+integration"; \
	hack/fuzz.sh $(FUZZ_SMOKE_TIME) || failed="$$failed fuzz"; \
	LAB_DIR="$$lab" KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) ./test/e2e/... 2>&1 | tee -a "$$log" || failed="$$failed e2e"; \
	$(MAKE) --no-print-directory test-istio 2>&1 | tee -a "$$log" || failed="$$failed istio"; \
	hack/leftovers.sh check "$$snap" || failed="$$failed leftovers"; rm -f "$$snap"; \
	if [ -n "$$failed" ]; then hack/test-failures.sh "$$log"; rm -f "$$log"; echo "make test: FAILED:$$failed"; exit 1; fi; rm -f "$$log"; \
	echo "make test: all suites passed"

# Gardener's local setup: this extension into the kind clusters of a gardener checkout at
# GARDENER_REPO_ROOT (gardener-operator), with skaffold (hack/local-setup.sh; skaffold and
# kustomize are built from the module proxy into TOOLS_BIN). extension-dev rebuilds on demand.
GARDENER_REPO_ROOT ?= $(REPO_ROOT)/../gardener
RUNTIME_KUBECONFIG ?= $(GARDENER_REPO_ROOT)/dev-setup/kubeconfigs/runtime/kubeconfig
.PHONY: extension-up extension-dev extension-down
extension-up extension-dev extension-down:
	@RUNTIME_KUBECONFIG=$(RUNTIME_KUBECONFIG) TOOLS_BIN=$(TOOLS_BIN) hack/local-setup.sh $(subst extension-,,$@)

# The root and integration suites (all but e2e, fuzzing and Istio's) REPEAT
# times in a row on this machine, each round with the leftover check; stops at
# the first failure, naming the round and its output (hack/repeat.sh). Each
# round runs REPEAT_PARALLEL test packages at once: four on two cores load the
# machine more than `make test` does, and halve a round's time.
REPEAT ?= 20
REPEAT_PARALLEL ?= 4
.PHONY: test-repeat
test-repeat:
	@hack/test-prereqs.sh
	@GO_TEST_FLAGS="$(GO_TEST_FLAGS) -p $(REPEAT_PARALLEL)" hack/repeat.sh $(REPEAT)

# The ACL against Istio's own config generation (istiod's code, in process): Gardener's
# kube-apiserver exposure objects and this extension's EnvoyFilters in, generated listeners and
# ECDS out, decided on with the project's RBAC evaluator. A nested module (test/istio) with a
# newer Istio than the product's API: `go test ./...` from the root does not build it. The first
# build takes 5-6 minutes on 2 cores; the Go build cache keeps it.
.PHONY: test-istio
test-istio:
	cd test/istio && go vet ./... && go test $(GO_TEST_FLAGS) -count=1 ./...

# The Istio-side figures of the ACL (listener bytes a shoot's change touches, RBAC evaluations
# per request, shards), as a table.
.PHONY: bench-istio
bench-istio:
	@cd test/istio && BENCH_TABLE=true go test -count=1 -v -timeout 30m ./... -ginkgo.label-filter=bench \
	  | grep -e '^|' -e 'FAIL' -e 'Timed out'

# The main job on this host, in plain sentences: seeds and a shoot built from
# source, the extension, a firewall machine in a network namespace with the
# real agent, the ACL, a control plane migration; then everything removed.
# Root only (network namespaces).
.PHONY: demo
demo:
	@if [ "$$(id -u)" != 0 ]; then echo "make demo needs root: it creates network namespaces and runs firewall agents in them (run it as root, e.g. sudo make demo)"; exit 1; fi
	@hack/test-prereqs.sh root-only
	@echo "make demo: building or reusing the control-plane binaries (cached; about 13 minutes the first time on 2 cores)"
	@assets="$$(hack/build-control-plane.sh)" && \
	  echo "make demo: building or reusing the lab (cached; about 4 minutes the first time)" && \
	  { lab="$$(hack/build-lab.sh)" || { echo "make demo: the lab could not be built (see above): the demo's firewall runs in a network namespace instead"; lab=""; }; } && \
	  echo "make demo: compiling the demo program (a few minutes the first time)" && \
	  LAB_DIR="$$lab" KUBEBUILDER_ASSETS="$$assets" go run ./test/demo

# Removes what an interrupted demo left behind (fwdemo-* processes, network
# namespaces with their veth links, folders); says so when nothing is left.
.PHONY: demo-down
demo-down:
	@if [ "$$(id -u)" != 0 ]; then echo "make demo-down needs root: it removes network namespaces"; exit 1; fi
	@go run ./test/demo down

# Each fuzz target for FUZZTIME, one after the other (hack/fuzz.sh lists them).
# Counts of executions, not durations: Go 1.26's fuzz coordinator can fail a
# duration run with "context deadline exceeded" when the time is up (golang/go#75804).
FUZZTIME           ?= 200000x
FUZZ_SMOKE_TIME    ?= 20000x

.PHONY: fuzz
fuzz:
	@hack/fuzz.sh $(FUZZTIME)

.PHONY: test-unit
test-unit:
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /test/)

# Images and binaries, built by hack/tools/image without a Docker engine.
# VERSION goes into the binaries (--version), the tag and the labels;
# SOURCE_DATE_EPOCH (the commit's time) is every time in the images, so the
# same commit gives the same digests. IMAGES empty means all three.
VERSION            ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION           ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH  ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_REPOSITORY   ?= ghcr.io/metal-firewall
PLATFORMS          ?= linux/amd64
AGENT_PLATFORM     ?= linux/amd64
IMAGES             ?=
IMAGE_TOOL         := go run ./hack/tools/image

.PHONY: images
images:
	$(IMAGE_TOOL) images --output _output/images --version $(VERSION) --revision $(REVISION) \
	  --epoch $(SOURCE_DATE_EPOCH) --repository $(IMAGE_REPOSITORY) --platforms $(PLATFORMS) $(IMAGES)

# The agent as a plain static binary, for firewall OS images.
.PHONY: firewall-agent
firewall-agent:
	$(IMAGE_TOOL) binary --output _output/bin --version $(VERSION) --platform $(AGENT_PLATFORM) firewall-agent

# Signs an agent binary for the self-update: BINARY.sig, and the SHA-256 for
# agentSHA256 on stdout (docs/operations/firewall/self-update.md).
.PHONY: sign-agent-release
sign-agent-release:
	@hack/sign-agent-release.sh "$(SIGNING_KEY)" "$(VERSION)" "$(or $(BINARY),_output/bin/firewall-agent)"

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS_BIN)/golangci-lint $@

$(CONTROLLER_GEN):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(TOOLS_BIN)/controller-gen $@

.PHONY: check
check: $(GOLANGCI_LINT)
	@hack/check-tracked-files.sh
	@hack/check-imports.sh
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	@# test/istio replaces the root module: a new dependency of the root changes its go.mod too.
	@cd test/istio && go mod tidy -diff >/dev/null || { echo "test/istio/go.mod is not tidy: run (cd test/istio && go mod tidy)"; exit 1; }
	$(GOLANGCI_LINT) run ./...

.PHONY: generate
generate: $(CONTROLLER_GEN)
	hack/update-upstream-crds.sh
	hack/generate-crds.sh $(CONTROLLER_GEN)
	@# The chart installs the seed CRDs; its copies follow the generated ones.
	rm -rf charts/gardener-extension-firewall/seed-crds
	mkdir -p charts/gardener-extension-firewall/seed-crds
	cp pkg/apis/firewall/crds/seed/*.yaml charts/gardener-extension-firewall/seed-crds/
	@# Registration examples with the chart packed in (deterministic: same chart, same bytes).
	go run ./hack/tools/controller-registration -out example

# Fails when `make generate` changes anything that is committed.
.PHONY: verify-generate
verify-generate: generate
	@if [ -n "$$(git status --porcelain -- upstream-crds pkg charts example)" ]; then \
	  echo "make generate changed committed files:"; git status --porcelain -- upstream-crds pkg charts example; exit 1; fi

# Apply figures of the firewall agent beside the rule-per-item baseline (nft -f),
# printed as a table; needs root for the network namespaces. The baseline is
# given up after BENCH_BASELINE_LIMIT per size.
BENCH_BASELINE_LIMIT ?= 60s
.PHONY: bench
bench:
	@if [ "$$(id -u)" != 0 ]; then echo "make bench needs root (network namespaces)"; exit 1; fi
	@hack/test-prereqs.sh bench
	@BENCH_TABLE=true BENCH_BASELINE_LIMIT=$(BENCH_BASELINE_LIMIT) go test ./pkg/firewall/nftables/ -count=1 -v -timeout 20m -ginkgo.label-filter=bench \
	  | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$$' -e '^ok '
	@BENCH_TABLE=true go test ./test/integration/agent/ -count=1 -v -timeout 10m -ginkgo.label-filter=bench \
	  | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$$' -e '^ok '
	@go test ./pkg/controller/acl/ -run '^$$' -bench RebuildShared -benchtime 10x -count=1 | grep '^Benchmark'
	@KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh)" BENCH_TABLE=true go test ./test/integration/acl/ -count=1 -v -timeout 90m -ginkgo.label-filter=bench \
	  | grep -e '^|' -e 'FAIL' -e 'Timed out'
	@KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh)" BENCH_TABLE=true go test ./test/integration/metalscale/ -count=1 -v -timeout 40m -ginkgo.label-filter=bench \
	  | grep -e '^|' -e 'FAIL' -e 'Timed out'
	@$(MAKE) --no-print-directory bench-istio
