#!/usr/bin/env bash
# Builds the Kubeflow training-operator (v1) from Go modules for the
# PodGroup gang e2e test (pkg/k8s/e2e TestKubeflowPyTorchJobGang), caches it
# outside the repo keyed by version like build.sh does for the API server,
# and prints the directory holding it on the LAST line of stdout. Progress
# goes to stderr.
#
# The directory holds:
#   training-operator                       the operator (cmd/training-operator.v1)
#   scheduling.x-k8s.io_podgroups.yaml      the PodGroup CRD from the
#                                           scheduler-plugins module's manifests
#   crds/kubeflow.org_*.yaml                the operator's CRDs (PyTorchJob, ...)
#                                           from its module's manifests
#   VERSION                                 written last: the cache is good
#
# The e2e test reads DROVER_TRAINING_OPERATOR (this directory) or looks in
# the default cache; it is skipped when the binary is not there, so a cold
# `make test` never waits for this build. `make testbin-operator` runs it.
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh).
set -euo pipefail

OPERATOR_VERSION="1.9.2"          # github.com/kubeflow/training-operator
SCHEDULER_PLUGINS_VERSION="0.33.5" # sigs.k8s.io/scheduler-plugins (PodGroup CRD)

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init testbin-operator
DEST="${CACHE_ROOT}/training-operator-${OPERATOR_VERSION}-sp-${SCHEDULER_PLUGINS_VERSION}"
WANT="training-operator v${OPERATOR_VERSION} scheduler-plugins v${SCHEDULER_PLUGINS_VERSION}"

cache_ok() {
	[[ -x "${DEST}/training-operator" && -s "${DEST}/scheduling.x-k8s.io_podgroups.yaml" ]] || return 1
	[[ -s "${DEST}/crds/kubeflow.org_pytorchjobs.yaml" ]] || return 1
	[[ "$(cat "${DEST}/VERSION" 2>/dev/null)" == "${WANT}" ]]
}
cache_print() { echo "${DEST}"; }

testbin_begin operator
OUT="${WORK}/out"
mkdir -p "${OUT}"

# The operator's module has no replace directives, so `go install
# module/cmd@version` builds it exactly as released, with its own go.sum.
log "training-operator v${OPERATOR_VERSION}: building cmd/training-operator.v1 with -p ${BUILD_P} (cold: several minutes on 2 cores)"
GOBIN="${OUT}" go install -p "${BUILD_P}" -trimpath -ldflags "-s -w" \
	"github.com/kubeflow/training-operator/cmd/training-operator.v1@v${OPERATOR_VERSION}" >&2
mv "${OUT}/training-operator.v1" "${OUT}/training-operator"
log "training-operator built ($((SECONDS - START))s elapsed)"

# The PodGroup CRD, from the scheduler-plugins module (the API drover reads).
SP_DIR="$(module_dir "sigs.k8s.io/scheduler-plugins@v${SCHEDULER_PLUGINS_VERSION}")"
CRD="${SP_DIR}/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
[[ -s "${CRD}" ]] || die "no PodGroup CRD at ${CRD}"
cp "${CRD}" "${OUT}/"
OP_DIR="$(module_dir "github.com/kubeflow/training-operator@v${OPERATOR_VERSION}")"
mkdir -p "${OUT}/crds"
cp "${OP_DIR}"/manifests/base/crds/kubeflow.org_*.yaml "${OUT}/crds/"
[[ -s "${OUT}/crds/kubeflow.org_pytorchjobs.yaml" ]] || die "no PyTorchJob CRD in ${OP_DIR}/manifests/base/crds"
chmod -R u+w "${OUT}/crds" "${OUT}/scheduling.x-k8s.io_podgroups.yaml"
echo "${WANT}" >"${OUT}/VERSION"

testbin_install "${OUT}" "${DEST}"
testbin_done
