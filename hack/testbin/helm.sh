#!/usr/bin/env bash
# Builds helm from Go modules only (Debian ships none and no prebuilt
# download works here), caches it outside the repo keyed by version, and
# prints the path of the binary on the LAST line of stdout. Progress goes to
# stderr. The chart tests (charts/) read it from DROVER_HELM:
#
#   export DROVER_HELM="$(hack/testbin/helm.sh | tail -1)"
#
# Environment (shared with build.sh):
#   DROVER_TESTBIN_CACHE   cache root (default: $HOME/.cache/drover/testbin)
#   DROVER_TESTBIN_P       go build -p parallelism (default: 2)
#   DROVER_TESTBIN_FORCE   set to 1 to rebuild even if the cache looks good
set -euo pipefail

HELM_VERSION="3.19.0"  # helm.sh/helm/v3 v$HELM_VERSION
# helm's own Makefile derives the Kubernetes version its lint and template
# assume from the client-go it builds with (v0.34.x -> 1.34); do the same.
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="34"

CACHE_ROOT="${DROVER_TESTBIN_CACHE:-${HOME}/.cache/drover/testbin}"
BUILD_P="${DROVER_TESTBIN_P:-2}"

log() { printf '[helm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"

mkdir -p "${CACHE_ROOT}"
CACHE_ROOT="$(cd "${CACHE_ROOT}" && pwd -P)"
DEST="${CACHE_ROOT}/helm-${HELM_VERSION}"

# cache_ok: the binary exists, runs and reports the expected version.
cache_ok() {
	local out
	[[ -x "${DEST}/helm" ]] || return 1
	out="$("${DEST}/helm" version --template '{{.Version}}' 2>&1)" || return 1
	[[ "${out}" == "v${HELM_VERSION}" ]]
}

if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
	log "cached: ${DEST}/helm"
	echo "${DEST}/helm"
	exit 0
fi

# Serialise concurrent builders; a lock of its own, so that a helm build
# does not wait for a kube-apiserver build (or the other way round).
exec 9>"${CACHE_ROOT}/.lock-helm"
if command -v flock >/dev/null 2>&1; then
	if ! flock -n 9; then
		log "another build holds ${CACHE_ROOT}/.lock-helm; waiting for it"
		flock 9
	fi
	if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
		log "cached (built by another process): ${DEST}/helm"
		echo "${DEST}/helm"
		exit 0
	fi
	rm -rf "${CACHE_ROOT}"/.build-helm.*
fi

# Built in a temp dir inside the cache root, then renamed into place: an
# interrupted build never leaves a half cache.
WORK="$(mktemp -d "${CACHE_ROOT}/.build-helm.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GO111MODULE=on
export GOFLAGS="-buildvcs=false"
START=${SECONDS}
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
if [[ -e "${DEST}" ]]; then
	mv -T "${DEST}" "${WORK}/old"   # stale or broken cache; removed on exit
fi
mv -T "${WORK}/out" "${DEST}"
cache_ok || die "installed helm in ${DEST} fails the version check"
log "installed into ${DEST} ($((SECONDS - START))s)"
echo "${DEST}/helm"
