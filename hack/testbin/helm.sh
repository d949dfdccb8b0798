#!/usr/bin/env bash
# Builds helm from Go modules only (Debian ships none and no prebuilt
# download works here), caches it outside the repo keyed by version, and
# prints the path of the binary on the LAST line of stdout. Progress goes to
# stderr. The chart tests (charts/) read it from DROVER_HELM:
#
#   export DROVER_HELM="$(hack/testbin/helm.sh | tail -1)"
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh).
set -euo pipefail

HELM_VERSION="3.19.0"  # helm.sh/helm/v3 v$HELM_VERSION
# helm's own Makefile derives the Kubernetes version its lint and template
# assume from the client-go it builds with (v0.34.x -> 1.34); do the same.
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="34"

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init helm
DEST="${CACHE_ROOT}/helm-${HELM_VERSION}"

# cache_ok: the binary exists, runs and reports the expected version.
cache_ok() {
	local out
	[[ -x "${DEST}/helm" ]] || return 1
	out="$("${DEST}/helm" version --template '{{.Version}}' 2>&1)" || return 1
	[[ "${out}" == "v${HELM_VERSION}" ]]
}
cache_print() { echo "${DEST}/helm"; }

# A lock of its own, so that a helm build does not wait for a
# kube-apiserver build (or the other way round).
testbin_begin helm
LDFLAGS="-s -w"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	LDFLAGS+=" -X ${pkg}.k8sVersionMajor=${HELM_K8S_MAJOR} -X ${pkg}.k8sVersionMinor=${HELM_K8S_MINOR}"
done
log "helm v${HELM_VERSION}: go install helm.sh/helm/v3/cmd/helm@v${HELM_VERSION} with -p ${BUILD_P} (cold: downloads and compiles its modules)"
mkdir -p "${WORK}/out"
GOBIN="${WORK}/out" go install -p "${BUILD_P}" -trimpath -ldflags "${LDFLAGS}" \
	"helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}" >&2
"${WORK}/out/helm" version >&2
testbin_install "${WORK}/out" "${DEST}"
testbin_done
