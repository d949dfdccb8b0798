#!/usr/bin/env bash
# Builds what the side-by-side binding benchmark (pkg/k8s/e2e
# BenchmarkSideBySide, `make bench-bind`) needs besides the API server:
#
#   kube-scheduler v1.34.4   from the same wrapper module as kube-apiserver
#                            (kube-wrapper.sh), so it shares the Go build
#                            cache that build.sh filled
#   kwok v0.8.0              `go install sigs.k8s.io/kwok/cmd/kwok@v0.8.0`,
#                            in its own module (it needs Kubernetes 0.36)
#
# Each is cached outside the repo keyed by its version, like build.sh's
# binaries; the LAST line of stdout is a directory holding both (symlinks
# into the two caches), to pass as DROVER_BENCH_ASSETS. Progress goes to
# stderr. `make test` never runs this: only `make bench-bind` does.
#
#   export DROVER_BENCH_ASSETS="$(hack/testbin/bench.sh | tail -1)"
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/kube-wrapper.sh"
KWOK_VERSION="0.8.0"   # sigs.k8s.io/kwok

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init testbin-bench
SCHED_DEST="${CACHE_ROOT}/kube-scheduler-${K8S_VERSION}"
KWOK_DEST="${CACHE_ROOT}/kwok-${KWOK_VERSION}"
DEST="${CACHE_ROOT}/bench-k8s-${K8S_VERSION}-kwok-${KWOK_VERSION}"

sched_ok() {
	[[ -x "${SCHED_DEST}/kube-scheduler" ]] || return 1
	[[ "$("${SCHED_DEST}/kube-scheduler" --version 2>&1)" == "Kubernetes v${K8S_VERSION}" ]]
}
# kwok's own version string is a constant of its source; the module version
# recorded in the binary is what go install built.
kwok_ok() {
	[[ -x "${KWOK_DEST}/kwok" ]] || return 1
	go version -m "${KWOK_DEST}/kwok" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+sigs\.k8s\.io/kwok[[:space:]]+v${KWOK_VERSION}[[:space:]]"
}
cache_ok() { sched_ok && kwok_ok; }
cache_print() {
	mkdir -p "${DEST}"
	ln -sfn "${SCHED_DEST}/kube-scheduler" "${DEST}/kube-scheduler"
	ln -sfn "${KWOK_DEST}/kwok" "${DEST}/kwok"
	echo "${DEST}"
}

testbin_begin bench
export GOFLAGS="-mod=mod -buildvcs=false"

if [[ "${FORCE}" == "1" ]] || ! sched_ok; then
	T=${SECONDS}
	kube_wrapper "${WORK}/kube" k8s.io/kubernetes/cmd/kube-scheduler
	mkdir -p "${WORK}/sched"
	log "kube-scheduler v${K8S_VERSION}: building with -p ${BUILD_P} (shares build.sh's Go build cache)"
	(cd "${WORK}/kube" && go build -p "${BUILD_P}" -trimpath -ldflags "-s -w${VERSION_LDFLAGS}" \
		-o "${WORK}/sched/" k8s.io/kubernetes/cmd/kube-scheduler >&2)
	"${WORK}/sched/kube-scheduler" --version >&2
	testbin_install "${WORK}/sched" "${SCHED_DEST}"
	sched_ok || die "${SCHED_DEST}/kube-scheduler fails the version check"
	log "kube-scheduler built in $((SECONDS - T))s"
fi

if [[ "${FORCE}" == "1" ]] || ! kwok_ok; then
	T=${SECONDS}
	mkdir -p "${WORK}/kwok"
	# kwok's module has no replace directives, so go install builds it as
	# released, with its own go.sum (no -mod=mod).
	log "kwok v${KWOK_VERSION}: go install with -p ${BUILD_P} (cold: about 10 min on 2 cores)"
	GOFLAGS="-buildvcs=false" GOBIN="${WORK}/kwok" go install -p "${BUILD_P}" -trimpath -ldflags "-s -w" \
		"sigs.k8s.io/kwok/cmd/kwok@v${KWOK_VERSION}" >&2
	testbin_install "${WORK}/kwok" "${KWOK_DEST}"
	kwok_ok || die "${KWOK_DEST}/kwok is not sigs.k8s.io/kwok v${KWOK_VERSION}"
	log "kwok built in $((SECONDS - T))s"
fi

testbin_done
