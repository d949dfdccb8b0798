#!/usr/bin/env bash
# Builds the control-plane binaries that controller-runtime's envtest needs
# (etcd + kube-apiserver, plus kubectl) from Go modules only, caches them
# outside the repo keyed by version, and prints the directory to use as
# KUBEBUILDER_ASSETS on the LAST line of stdout. Progress goes to stderr.
#
#   export KUBEBUILDER_ASSETS="$(hack/testbin/build.sh | tail -1)"
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh), and
#   DROVER_TESTBIN_KUBECTL set to 0 to skip building kubectl (default: 1)
set -euo pipefail

# K8S_VERSION (kube-apiserver / kubectl, k8s.io/kubernetes v$K8S_VERSION) and
# the wrapper module that builds them: kube-wrapper.sh, shared with bench.sh.
source "$(dirname "${BASH_SOURCE[0]}")/kube-wrapper.sh"
ETCD_VERSION="3.5.21"  # etcd (go.etcd.io/etcd/server/v3 v$ETCD_VERSION)

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init testbin
WITH_KUBECTL="${DROVER_TESTBIN_KUBECTL:-1}"
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

cache_print() { echo "${DEST}"; }

testbin_begin apiserver
export GOFLAGS="-mod=mod -buildvcs=false"
OUT="${WORK}/out"
mkdir -p "${OUT}"

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
testbin_install "${OUT}" "${DEST}"
testbin_done
