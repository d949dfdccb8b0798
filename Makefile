# drover's build and test entry points. `make test` is what CI runs.
GO ?= go

.PHONY: test unit testbin sim bench bench-bind fmt vet generate dev-cluster

# The whole test suite: vet, unit and simulator tests, and the Kubernetes
# end-to-end tests against a real kube-apiserver and etcd that
# hack/testbin/build.sh builds from Go modules (cached after the first run).
test: vet
	@if [ -x hack/testbin/build.sh ]; then \
		assets=$$(hack/testbin/build.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets $(GO) test -timeout 45m ./... ; \
	else \
		$(GO) test -timeout 45m ./... ; \
	fi

# Unit and simulator tests only (no API server).
unit:
	$(GO) test -short ./...

testbin:
	hack/testbin/build.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

sim:
	$(GO) run ./cmd/drover sim

# Benchmarks; the API-server ones (pkg/k8s/e2e) need the testbin binaries.
bench:
	@if [ -x hack/testbin/build.sh ]; then \
		assets=$$(hack/testbin/build.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets $(GO) test -run XXX -bench . -benchtime 3x ./... ; \
	else \
		$(GO) test -run XXX -bench . -benchtime 3x ./... ; \
	fi

# drover beside kube-scheduler v1.34.4 on one API server, same pods, same
# kwok nodes (pkg/k8s/e2e BenchmarkSideBySide; docs/kubernetes.md). Builds
# kube-scheduler and kwok first (hack/testbin/bench.sh, cached; cold about
# 10 minutes), which `make test` never does. DROVER_BENCH_NODES,
# DROVER_BENCH_PODS, DROVER_BENCH_REPS, DROVER_BENCH_QPS tune it.
bench-bind:
	@assets=$$(hack/testbin/build.sh | tail -n 1) && bench=$$(hack/testbin/bench.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets DROVER_BENCH_ASSETS=$$bench \
		$(GO) test -run XXX -bench SideBySide -benchtime 1x -timeout 4h ./pkg/k8s/e2e/

# Regenerates the TrainingJob deepcopy code and CRD YAML from the Go types in
# pkg/apis (pinned controller-gen; a test fails when they are stale).
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0
generate:
	GOFLAGS= $(CONTROLLER_GEN) object paths=./pkg/apis/...
	GOFLAGS= $(CONTROLLER_GEN) crd:allowDangerousTypes=true,maxDescLen=0,generateEmbeddedObjectMeta=true paths=./pkg/apis/... output:crd:artifacts:config=config/crd

# A local cluster on loopback: etcd + kube-apiserver (from hack/testbin),
# stand-in nodes and trainers, and the scheduler (POLICY, default fitgpp).
# Prints the KUBECONFIG to use with `kubectl apply -f examples/`.
POLICY ?= fitgpp
dev-cluster:
	@assets=$$(hack/testbin/build.sh | tail -n 1) && \
		$(GO) run ./cmd/drover dev-cluster --assets $$assets --policy '$(POLICY)'
