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

K8S_VERSION="1.34.4"   # kube-apiserver / kubectl (k8s.io/kubernetes v$K8S_VERSION)
ETCD_VERSION="3.5.21"  # etcd (go.etcd.io/etcd/server/v3 v$ETCD_VERSION)

# Staging modules are published as v0.<minor>.<patch> (1.34.4 -> 0.34.4).
STAGING_VERSION="0.${K8S_VERSION#*.}"
K8S_MAJOR="${K8S_VERSION%%.*}"
K8S_MINOR="${K8S_VERSION#*.}"; K8S_MINOR="${K8S_MINOR%%.*}"

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
log "kubernetes v${K8S_VERSION}: downloading k8s.io/kubernetes to read its go.mod"
mkdir -p "${WORK}/kube"
KMOD_JSON="$(cd "${WORK}/kube" && go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}")" \
	|| die "go mod download k8s.io/kubernetes@v${K8S_VERSION} failed: ${KMOD_JSON:-}"
KMOD="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"${KMOD_JSON}")"
[[ -f "${KMOD}" ]] || die "cannot find k8s.io/kubernetes v${K8S_VERSION} go.mod (got '${KMOD}')"

# Staging modules = every `k8s.io/X => ./staging/src/k8s.io/X` replace in
# kubernetes' go.mod (single-line or block form).
mapfile -t STAGING < <(awk '
	/^replace[[:space:]]*\(/ { inblock = 1; next }
	inblock && /^\)/ { inblock = 0; next }
	{
		line = $0
		sub(/^replace[[:space:]]+/, "", line)
		n = split(line, f, /[[:space:]]+/)
		# fields may start with an empty one when the line is indented
		for (i = 1; i <= n; i++) if (f[i] != "") break
		if (f[i+1] == "=>" && f[i+2] ~ /^\.\/staging\//) print f[i]
	}' "${KMOD}" | sort -u)
((${#STAGING[@]} > 10)) || die "found only ${#STAGING[@]} staging modules in ${KMOD}"
# Every `k8s.io/* v0.0.0` require must be covered by a staging replace.
while read -r m; do
	printf '%s\n' "${STAGING[@]}" | grep -qx "${m}" || die "required ${m} v0.0.0 has no staging replace"
done < <(awk '$2 == "v0.0.0" && $1 ~ /^k8s\.io\// { print $1 }' "${KMOD}")
log "kubernetes v${K8S_VERSION}: replacing ${#STAGING[@]} staging modules with v${STAGING_VERSION}"

# Mirror kubernetes' own go / godebug lines so runtime defaults match upstream.
KGO="$(awk '$1 == "go" { print $2; exit }' "${KMOD}")"
KGODEBUG="$(awk '$1 == "godebug" && $2 != "(" { $1 = ""; sub(/^ /, ""); print; exit }' "${KMOD}")"
{
	echo "module drover.local/testbin/kube"
	echo
	echo "go ${KGO}"
	[[ -n "${KGODEBUG}" ]] && { echo; echo "godebug ${KGODEBUG}"; }
	echo
	echo "require k8s.io/kubernetes v${K8S_VERSION}"
	echo
	echo "replace ("
	for m in "${STAGING[@]}"; do
		printf '\t%s => %s v%s\n' "${m}" "${m}" "${STAGING_VERSION}"
	done
	echo ")"
} >"${WORK}/kube/go.mod"

PKGS=(k8s.io/kubernetes/cmd/kube-apiserver)
[[ "${WITH_KUBECTL}" == "1" ]] && PKGS+=(k8s.io/kubernetes/cmd/kubectl)
{
	echo "//go:build tools"
	echo
	echo "// Package tools pins the commands built from this wrapper module."
	echo "package tools"
	echo
	echo "import ("
	for p in "${PKGS[@]}"; do printf '\t_ "%s"\n' "${p}"; done
	echo ")"
} >"${WORK}/kube/tools.go"

VERSION_LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	VERSION_LDFLAGS+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitMajor=${K8S_MAJOR}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitMinor=${K8S_MINOR}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitTreeState=clean"
done
(
	cd "${WORK}/kube"
	log "kubernetes v${K8S_VERSION}: go mod tidy (downloads a few hundred MB on a cold module cache)"
	go mod tidy >&2
	v="$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/apiserver)"
	[[ "${v}" == "v${STAGING_VERSION}" ]] || die "k8s.io/apiserver resolved to ${v}, want v${STAGING_VERSION}"
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
