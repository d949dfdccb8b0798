#!/usr/bin/env bash
# Builds the control-plane binaries that controller-runtime's envtest needs
# (etcd + kube-apiserver, plus kubectl) from Go modules only, caches them
# outside the repo keyed by version, and prints the directory to use as
# KUBEBUILDER_ASSETS on the LAST line of stdout. Progress goes to stderr.
#
#   export KUBEBUILDER_ASSETS="$(hack/testbin/build.sh | tail -1)"
#
# Environment:
#   DROVER_TESTBIN_CACHE   cache root (default: $HOME/.cache/drover/testbin)
#   DROVER_TESTBIN_P       go build -p parallelism (default: 2)
#   DROVER_TESTBIN_KUBECTL set to 0 to skip building kubectl (default: 1)
#   DROVER_TESTBIN_FORCE   set to 1 to rebuild even if the cache looks good
#   DROVER_TESTBIN_KEEP    set to 1 to keep the temporary build dir (debugging)
set -euo pipefail

# K8S_VERSION (kube-apiserver / kubectl, k8s.io/kubernetes v$K8S_VERSION) and
# the wrapper module that builds them: kube-wrapper.sh, shared with bench.sh.
source "$(dirname "${BASH_SOURCE[0]}")/kube-wrapper.sh"
ETCD_VERSION="3.5.21"  # etcd (go.etcd.io/etcd/server/v3 v$ETCD_VERSION)

CACHE_ROOT="${DROVER_TESTBIN_CACHE:-${HOME}/.cache/drover/testbin}"
BUILD_P="${DROVER_TESTBIN_P:-2}"
WITH_KUBECTL="${DROVER_TESTBIN_KUBECTL:-1}"

log() { printf '[testbin] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"

mkdir -p "${CACHE_ROOT}"
CACHE_ROOT="$(cd "${CACHE_ROOT}" && pwd -P)"
DEST="${CACHE_ROOT}/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

# cache_ok: both binaries exist, run, and report the expected versions.
cache_ok() {
	local out
	[[ -x "${DEST}/etcd" && -x "${DEST}/kube-apiserver" ]] || return 1
	out="$("${DEST}/etcd" --version 2>&1)" || return 1
	grep -q "etcd Version: ${ETCD_VERSION}\$" <<<"${out}" || return 1
	out="$("${DEST}/kube-apiserver" --version 2>&1)" || return 1
	[[ "${out}" == "Kubernetes v${K8S_VERSION}" ]] || return 1
	if [[ "${WITH_KUBECTL}" == "1" ]]; then
		[[ -x "${DEST}/kubectl" ]] || return 1
	fi
	return 0
}

if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
	log "cached: ${DEST}"
	echo "${DEST}"
	exit 0
fi

# Serialise concurrent builders (e.g. two test runs started at once); the
# second one waits, then finds the cache filled.
exec 9>"${CACHE_ROOT}/.lock"
if command -v flock >/dev/null 2>&1; then
	if ! flock -n 9; then
		log "another build holds ${CACHE_ROOT}/.lock; waiting for it"
		flock 9
	fi
	if [[ "${DROVER_TESTBIN_FORCE:-0}" != "1" ]] && cache_ok; then
		log "cached (built by another process): ${DEST}"
		echo "${DEST}"
		exit 0
	fi
	# We hold the lock, so any leftover build dir is from a killed build.
	rm -rf "${CACHE_ROOT}"/.build.*
fi

# The temp dir lives inside the cache root so the final mv is a rename on the
# same filesystem (atomic): an interrupted build never leaves a half cache.
WORK="$(mktemp -d "${CACHE_ROOT}/.build.XXXXXX")"
cleanup() {
	if [[ "${DROVER_TESTBIN_KEEP:-0}" == "1" ]]; then
		log "keeping ${WORK}"
	else
		rm -rf "${WORK}"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
export GO111MODULE=on
OUT="${WORK}/out"
mkdir -p "${OUT}"
START=${SECONDS}

# ---------------------------------------------------------------- etcd ------
log "etcd v${ETCD_VERSION}: preparing wrapper module"
mkdir -p "${WORK}/etcd"
cat >"${WORK}/etcd/go.mod" <<EOF
module drover.local/testbin/etcd

go 1.23.0

require (
	go.etcd.io/etcd/api/v3 v${ETCD_VERSION}
	go.etcd.io/etcd/client/pkg/v3 v${ETCD_VERSION}
	go.etcd.io/etcd/client/v3 v${ETCD_VERSION}
	go.etcd.io/etcd/pkg/v3 v${ETCD_VERSION}
	go.etcd.io/etcd/raft/v3 v${ETCD_VERSION}
	go.etcd.io/etcd/server/v3 v${ETCD_VERSION}
)
EOF
cat >"${WORK}/etcd/main.go" <<'EOF'
// Command etcd is go.etcd.io/etcd/v3's main.go: etcd's server entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
EOF
(
	cd "${WORK}/etcd"
	go mod tidy >&2
	# Resolved etcd modules must be exactly the requested release.
	for m in api/v3 client/pkg/v3 client/v3 pkg/v3 raft/v3 server/v3; do
		v="$(go list -m -f '{{.Version}}' "go.etcd.io/etcd/${m}")"
		[[ "${v}" == "v${ETCD_VERSION}" ]] || die "go.etcd.io/etcd/${m} resolved to ${v}, want v${ETCD_VERSION}"
	done
	log "etcd v${ETCD_VERSION}: building"
	go build -p "${BUILD_P}" -trimpath \
		-ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v${ETCD_VERSION}-gomod" \
		-o "${OUT}/etcd" . >&2
)
log "etcd built ($((SECONDS - START))s elapsed)"

# ------------------------------------------------------- kube-apiserver -----
PKGS=(k8s.io/kubernetes/cmd/kube-apiserver)
[[ "${WITH_KUBECTL}" == "1" ]] && PKGS+=(k8s.io/kubernetes/cmd/kubectl)
kube_wrapper "${WORK}/kube" "${PKGS[@]}"
(
	cd "${WORK}/kube"
	log "kubernetes v${K8S_VERSION}: building ${PKGS[*]} with -p ${BUILD_P} (cold: ~5 min on 2 cores)"
	go build -p "${BUILD_P}" -trimpath -ldflags "-s -w${VERSION_LDFLAGS}" -o "${OUT}/" "${PKGS[@]}" >&2
)
log "kubernetes binaries built ($((SECONDS - START))s elapsed)"

# ------------------------------------------------------------- install ------
"${OUT}/etcd" --version >&2
"${OUT}/kube-apiserver" --version >&2
if [[ -e "${DEST}" ]]; then
	mv -T "${DEST}" "${WORK}/old"   # stale or broken cache; removed by cleanup
fi
mv -T "${OUT}" "${DEST}"
cache_ok || die "installed binaries in ${DEST} fail the version check"
log "installed into ${DEST} ($((SECONDS - START))s)"
echo "${DEST}"
