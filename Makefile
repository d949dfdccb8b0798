# drover's build and test entry points. `make test` is what CI runs.
GO ?= go

.PHONY: test unit testbin testbin-operator testbin-kueue testbin-karpenter python-torch pytorch-figures helm sim bench bench-bind soak fmt vet generate manifests image dev-cluster

# The whole test suite: vet, unit and simulator tests, the Kubernetes
# end-to-end tests against a real kube-apiserver and etcd that
# hack/testbin/build.sh builds from Go modules, and the Helm chart's tests
# with the helm that hack/testbin/helm.sh builds (both cached after the
# first run).
test: vet
	@assets=$$(hack/testbin/build.sh | tail -n 1) && \
		helm=$$(hack/testbin/helm.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets DROVER_HELM=$$helm $(GO) test -timeout 45m ./...

# Unit and simulator tests only (no API server).
unit:
	$(GO) test -short ./...

testbin:
	hack/testbin/build.sh

# The Kubeflow training-operator v1.9.2, built from Go modules and cached
# like the API server (cold: 6 to 15 minutes on 2 shared cores), for the
# PodGroup gang e2e test, which is skipped while it is not cached. CI runs
# this before `make test`, so that the operator's cold build is not part
# of the test run's own timeout.
testbin-operator:
	hack/testbin/operator.sh

# Kueue v0.14.0's controller manager, built from Go modules in its own
# module (`go install sigs.k8s.io/kueue/cmd/kueue@v0.14.0`, not drover's
# go.mod) under nice and cached like the operator, for the Kueue-in-front
# e2e test (TestKueueInFront), which is skipped while it is not cached.
# CI runs this before `make test`.
testbin-kueue:
	hack/testbin/kueue.sh

# kube-controller-manager and kube-scheduler v1.34.4 (build.sh's wrapper
# module) and Karpenter v1.6.0's kwok provider (its own module, `go install
# sigs.k8s.io/karpenter/kwok@v1.6.0`), built at once and cached like the
# operator, for the autoscaling e2e test (TestKarpenterLoop), which is
# skipped while they are not cached. CI runs this before `make test`.
testbin-karpenter:
	hack/testbin/karpenter.sh

helm:
	hack/testbin/helm.sh

# Debian's python3-torch (CPU) for the examples/pytorch e2e test
# (TestPyTorchTrainerPreemptedAndResumed, skipped while no python3 imports
# torch); CI runs it before `make test`. Idempotent; cold 446 s here. The
# Python client's own tests (clients/python) need no torch and run in
# `make test` through go test (TestPythonClient).
python-torch:
	hack/python-torch.sh

# The figures of docs/trainer.md (docs/img/pytorch-loss.svg and
# docs/img/pytorch-times.txt) from one run of the PyTorch e2e test.
pytorch-figures:
	@assets=$$(hack/testbin/build.sh | tail -n 1) && helm=$$(hack/testbin/helm.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets DROVER_HELM=$$helm DROVER_PYTORCH_OUT=$(CURDIR)/docs/img \
		$(GO) test -count=1 -run 'TestPyTorchTrainerPreemptedAndResumed$$' -v ./pkg/k8s/e2e/

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

sim:
	$(GO) run ./cmd/drover sim

# Benchmarks; the API-server ones (pkg/k8s/e2e) need the testbin binaries.
# Every benchmark, -benchtime 3x, written in benchstat's format to
# docs/bench/DATE-COMMIT.txt with the commit, machine and load noted
# (hack/bench.sh; DROVER_BENCH=pattern and DROVER_BENCH_PKGS=packages run
# fewer). Commit the file; docs quote these files.
bench:
	@if [ -x hack/testbin/build.sh ]; then \
		assets=$$(hack/testbin/build.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets hack/bench.sh ; \
	else \
		hack/bench.sh ; \
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

# The full soak (pkg/k8s/e2e TestSoak; docs/kubernetes.md, Soak): 2,000
# single-replica TrainingJobs on 50 stand-in nodes at time scale 40, with
# the default 1 s period; counts the scheduler's writes per job, conflicts,
# cycle times, idle cycles and heap per finished job. `make test` runs the
# same test at 200 jobs on 10 nodes.
SOAK_JOBS ?= 2000
SOAK_NODES ?= 50
soak:
	@assets=$$(hack/testbin/build.sh | tail -n 1) && \
		KUBEBUILDER_ASSETS=$$assets DROVER_SOAK_JOBS=$(SOAK_JOBS) DROVER_SOAK_NODES=$(SOAK_NODES) \
		$(GO) test -count=1 -run 'TestSoak$$' -v -timeout 60m ./pkg/k8s/e2e/

# Regenerates the TrainingJob deepcopy code and CRD YAML from the Go types in
# pkg/apis (pinned controller-gen; a test fails when they are stale).
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0
generate:
	GOFLAGS= $(CONTROLLER_GEN) object paths=./pkg/apis/...
	GOFLAGS= $(CONTROLLER_GEN) crd:allowDangerousTypes=true,maxDescLen=0,generateEmbeddedObjectMeta=true paths=./pkg/apis/... output:crd:artifacts:config=config/crd
	cp config/crd/drover.dev_trainingjobs.yaml charts/drover/files/drover.dev_trainingjobs.yaml

# Renders the chart with its default values into deploy/drover.yaml, for
# installing without helm (a test fails when it is stale).
MANIFESTS_ARGS = template drover charts/drover --namespace drover-system
manifests:
	@helm=$$(hack/testbin/helm.sh | tail -n 1) && { \
		echo "# Generated by \`make manifests\` from charts/drover with its default values"; \
		echo "# (helm $(MANIFESTS_ARGS)). Do not edit: change the chart."; \
		echo "# Install: kubectl create namespace drover-system && kubectl apply --server-side -f deploy/drover.yaml"; \
		$$helm $(MANIFESTS_ARGS); } > deploy/drover.yaml.tmp && mv deploy/drover.yaml.tmp deploy/drover.yaml

# The scheduler image (Dockerfile) with the first container builder that
# works: docker (when its daemon answers), podman, buildah.
IMAGE ?= ghcr.io/drover-sched/drover-scheduler
TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
image:
	@if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then builder="docker build"; \
	elif command -v podman >/dev/null 2>&1; then builder="podman build"; \
	elif command -v buildah >/dev/null 2>&1; then builder="buildah bud"; \
	else \
		if command -v docker >/dev/null 2>&1; then \
			echo "make image: no container builder here: docker is installed but its daemon does not answer (docker info fails), and neither podman nor buildah is on PATH." >&2; \
		else \
			echo "make image: no container builder here: none of docker, podman and buildah is on PATH." >&2; \
		fi; \
		echo "  Start or install one and run make image again, or build with ko (no daemon needed):" >&2; \
		echo "    KO_DOCKER_REPO=<registry>/drover-scheduler ko build --bare ./cmd/drover-scheduler" >&2; \
		exit 1; \
	fi; \
	echo "$$builder -t $(IMAGE):$(TAG) ."; \
	$$builder -t $(IMAGE):$(TAG) . && \
	echo "built $(IMAGE):$(TAG); push it with: $${builder%% *} push $(IMAGE):$(TAG)"

# A local cluster on loopback: etcd + kube-apiserver (from hack/testbin),
# stand-in nodes and trainers, and the scheduler (POLICY; default: the
# drover preset, with SpeCon scaled to the 5x trainers, as `drover
# dev-cluster` runs it). Prints the KUBECONFIG to use with
# `kubectl apply -f examples/`. `make dev-cluster HELM=1` starts the API
# server and stand-in nodes only, no CRD and no scheduler, so that
# `helm install drover charts/drover` owns the CRDs and the PriorityClass.
POLICY ?=
HELM ?=
dev-cluster:
	@assets=$$(hack/testbin/build.sh | tail -n 1) && \
		$(GO) run ./cmd/drover dev-cluster --assets $$assets $(if $(POLICY),--policy '$(POLICY)') $(if $(HELM),--for-helm)
