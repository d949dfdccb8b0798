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
# Environment:
#   DROVER_TESTBIN_CACHE   cache root (default: $HOME/.cache/drover/testbin)
#   DROVER_TESTBIN_P       go build -p parallelism (default: 2)
#   DROVER_TESTBIN_FORCE   set to 1 to rebuild even if the cache looks good
set -euo pipefail

KUEUE_VERSION="0.14.0" # sigs.k8s.io/kueue

CACHE_ROOT="${DROVER_TESTBIN_CACHE:-${HOME}/.cache/drover/testbin}"
BUILD_P="${DROVER_TESTBIN_P:-2}"

log() { printf '[testbin-kueue] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
mkdir -p "${CACHE_ROOT}"
CACHE_ROOT="$(cd "${CACHE_ROOT}" && pwd -P)"
DEST="${CACHE_ROOT}/kueue-${KUEUE_VERSION}"
WANT="kueue v${KUEUE_VERSION}"

cache_ok() {
	[[ -x "${DEST}/kueue" ]] || return 1
	[[ -s "${DEST}/crds/kueue.x-k8s.io_clusterqueues.yaml" && -s "${DEST}/crds/kueue.x-k8s.io_workloads.yaml" ]] || return 1
	[[ "$(cat "${DEST}/VERSION" 2>/dev/null)" == "${WANT}" ]]
}

if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
	log "cached: ${DEST}"
	echo "${DEST}"
	exit 0
fi

exec 9>"${CACHE_ROOT}/.lock-kueue"
if command -v flock >/dev/null 2>&1; then
	if ! flock -n 9; then
		log "another build holds ${CACHE_ROOT}/.lock-kueue; waiting for it"
		flock 9
	fi
	if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
		log "cached (built by another process): ${DEST}"
		echo "${DEST}"
		exit 0
	fi
	rm -rf "${CACHE_ROOT}"/.build-kueue.*
fi

WORK="$(mktemp -d "${CACHE_ROOT}/.build-kueue.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GO111MODULE=on
export GOFLAGS="-buildvcs=false"
START=${SECONDS}
OUT="${WORK}/out"
mkdir -p "${OUT}"

log "kueue v${KUEUE_VERSION}: building cmd/kueue with -p ${BUILD_P} under nice (cold: many minutes on 2 shared cores)"
GOBIN="${OUT}" nice -n 10 go install -p "${BUILD_P}" -trimpath -ldflags "-s -w" \
	"sigs.k8s.io/kueue/cmd/kueue@v${KUEUE_VERSION}" >&2
log "kueue built ($((SECONDS - START))s elapsed)"

K_DIR="$(cd "${WORK}" && go mod download -json "sigs.k8s.io/kueue@v${KUEUE_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
mkdir -p "${OUT}/crds"
cp "${K_DIR}"/config/components/crd/bases/kueue.x-k8s.io_*.yaml "${OUT}/crds/"
[[ -s "${OUT}/crds/kueue.x-k8s.io_clusterqueues.yaml" ]] || die "no ClusterQueue CRD in ${K_DIR}/config/components/crd/bases"
chmod -R u+w "${OUT}/crds"
echo "${WANT}" >"${OUT}/VERSION"

if [[ -e "${DEST}" ]]; then
	mv -T "${DEST}" "${WORK}/old"
fi
mv -T "${OUT}" "${DEST}"
cache_ok || die "installed files in ${DEST} fail the check"
log "installed into ${DEST} ($((SECONDS - START))s)"
echo "${DEST}"
