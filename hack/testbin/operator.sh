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
# Environment:
#   DROVER_TESTBIN_CACHE   cache root (default: $HOME/.cache/drover/testbin)
#   DROVER_TESTBIN_P       go build -p parallelism (default: 2)
#   DROVER_TESTBIN_FORCE   set to 1 to rebuild even if the cache looks good
set -euo pipefail

OPERATOR_VERSION="1.9.2"          # github.com/kubeflow/training-operator
SCHEDULER_PLUGINS_VERSION="0.33.5" # sigs.k8s.io/scheduler-plugins (PodGroup CRD)

CACHE_ROOT="${DROVER_TESTBIN_CACHE:-${HOME}/.cache/drover/testbin}"
BUILD_P="${DROVER_TESTBIN_P:-2}"

log() { printf '[testbin-operator] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
mkdir -p "${CACHE_ROOT}"
CACHE_ROOT="$(cd "${CACHE_ROOT}" && pwd -P)"
DEST="${CACHE_ROOT}/training-operator-${OPERATOR_VERSION}-sp-${SCHEDULER_PLUGINS_VERSION}"
WANT="training-operator v${OPERATOR_VERSION} scheduler-plugins v${SCHEDULER_PLUGINS_VERSION}"

cache_ok() {
	[[ -x "${DEST}/training-operator" && -s "${DEST}/scheduling.x-k8s.io_podgroups.yaml" ]] || return 1
	[[ -s "${DEST}/crds/kubeflow.org_pytorchjobs.yaml" ]] || return 1
	[[ "$(cat "${DEST}/VERSION" 2>/dev/null)" == "${WANT}" ]]
}

if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
	log "cached: ${DEST}"
	echo "${DEST}"
	exit 0
fi

exec 9>"${CACHE_ROOT}/.lock-operator"
if command -v flock >/dev/null 2>&1; then
	if ! flock -n 9; then
		log "another build holds ${CACHE_ROOT}/.lock-operator; waiting for it"
		flock 9
	fi
	if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
		log "cached (built by another process): ${DEST}"
		echo "${DEST}"
		exit 0
	fi
	rm -rf "${CACHE_ROOT}"/.build-operator.*
fi

WORK="$(mktemp -d "${CACHE_ROOT}/.build-operator.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GO111MODULE=on
export GOFLAGS="-buildvcs=false"
START=${SECONDS}
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
SP_DIR="$(cd "${WORK}" && go mod download -json "sigs.k8s.io/scheduler-plugins@v${SCHEDULER_PLUGINS_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
CRD="${SP_DIR}/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
[[ -s "${CRD}" ]] || die "no PodGroup CRD at ${CRD}"
cp "${CRD}" "${OUT}/"
OP_DIR="$(cd "${WORK}" && go mod download -json "github.com/kubeflow/training-operator@v${OPERATOR_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
mkdir -p "${OUT}/crds"
cp "${OP_DIR}"/manifests/base/crds/kubeflow.org_*.yaml "${OUT}/crds/"
[[ -s "${OUT}/crds/kubeflow.org_pytorchjobs.yaml" ]] || die "no PyTorchJob CRD in ${OP_DIR}/manifests/base/crds"
chmod -R u+w "${OUT}/crds" "${OUT}/scheduling.x-k8s.io_podgroups.yaml"
echo "${WANT}" >"${OUT}/VERSION"

if [[ -e "${DEST}" ]]; then
	mv -T "${DEST}" "${WORK}/old"
fi
mv -T "${OUT}" "${DEST}"
cache_ok || die "installed files in ${DEST} fail the check"
log "installed into ${DEST} ($((SECONDS - START))s)"
echo "${DEST}"
