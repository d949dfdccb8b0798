#!/usr/bin/env bash
# Builds Kueue's controller manager (sigs.k8s.io/kueue cmd/kueue) from Go
# modules for the Kueue-in-front e2e test (pkg/k8s/e2e TestKueueInFront),
# caches it outside the repo keyed by version like operator.sh does for the
# training-operator, and prints the directory holding it on the LAST line of
# stdout. Progress goes to stderr.
#
# The directory holds:
#   kueue                          the controller manager (cmd/kueue)
#   crds/kueue.x-k8s.io_*.yaml     Kueue's CRDs from its module's
#                                  config/components/crd/bases
#   VERSION                        written last: the cache is good
#
# Kueue v0.14.0 is the newest release the module proxy serves here (v0.14.1
# to v0.14.4 are refused). Its module has no replace directives, so `go
# install module/cmd@version` builds it exactly as released with its own
# go.mod and go.sum (go 1.25, k8s.io v0.34.1, controller-runtime v0.22.1,
# training-operator v1.9.3, ...), in a module of its own: drover's go.mod
# is not involved.
#
# The e2e test reads DROVER_KUEUE (this directory) or looks in the default
# cache; it is skipped when the binary is not there, so a cold `make test`
# never waits for this build. `make testbin-kueue` runs it; CI runs it
# before `make test`.
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh).
set -euo pipefail

KUEUE_VERSION="0.14.0" # sigs.k8s.io/kueue

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init testbin-kueue
DEST="${CACHE_ROOT}/kueue-${KUEUE_VERSION}"
WANT="kueue v${KUEUE_VERSION}"

cache_ok() {
	[[ -x "${DEST}/kueue" ]] || return 1
	[[ -s "${DEST}/crds/kueue.x-k8s.io_clusterqueues.yaml" && -s "${DEST}/crds/kueue.x-k8s.io_workloads.yaml" ]] || return 1
	[[ "$(cat "${DEST}/VERSION" 2>/dev/null)" == "${WANT}" ]]
}
cache_print() { echo "${DEST}"; }

testbin_begin kueue
OUT="${WORK}/out"
mkdir -p "${OUT}"

log "kueue v${KUEUE_VERSION}: building cmd/kueue with -p ${BUILD_P} under nice (cold: many minutes on 2 shared cores)"
GOBIN="${OUT}" nice -n 10 go install -p "${BUILD_P}" -trimpath -ldflags "-s -w" \
	"sigs.k8s.io/kueue/cmd/kueue@v${KUEUE_VERSION}" >&2
log "kueue built ($((SECONDS - START))s elapsed)"

K_DIR="$(module_dir "sigs.k8s.io/kueue@v${KUEUE_VERSION}")"
mkdir -p "${OUT}/crds"
cp "${K_DIR}"/config/components/crd/bases/kueue.x-k8s.io_*.yaml "${OUT}/crds/"
[[ -s "${OUT}/crds/kueue.x-k8s.io_clusterqueues.yaml" ]] || die "no ClusterQueue CRD in ${K_DIR}/config/components/crd/bases"
chmod -R u+w "${OUT}/crds"
echo "${WANT}" >"${OUT}/VERSION"

testbin_install "${OUT}" "${DEST}"
testbin_done
