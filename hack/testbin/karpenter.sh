#!/usr/bin/env bash
# Builds what the autoscaling e2e test (pkg/k8s/e2e TestKarpenterLoop)
# runs beside the API server, from Go modules, and caches each part outside
# the repo keyed by its version, like build.sh and kueue.sh:
#
#   kube-controller-manager v1.34.4  the wrapper module of build.sh
#                                    (kube-wrapper.sh), so it shares the Go
#                                    build cache with kube-apiserver; turns
#                                    placeholder Deployments into pods
#   kube-scheduler v1.34.4           the same wrapper (bench.sh's cache
#                                    directory): binds the placeholder pods
#                                    and marks those that fit nowhere
#                                    PodScheduled=False, Unschedulable
#   karpenter-kwok v1.6.0            `go install sigs.k8s.io/karpenter/kwok@
#                                    v1.6.0`, Karpenter with its kwok cloud
#                                    provider, in a module of its own (it
#                                    needs k8s.io v0.33 and controller-
#                                    runtime v0.21, not drover's), with its
#                                    CRDs (NodePool, NodeClaim from
#                                    kwok/charts/crds; KWOKNodeClass from
#                                    kwok/apis/crds)
#
# The two builds run at once (the Kubernetes one and Karpenter's share few
# packages). The LAST line of stdout is a directory of symlinks into the
# caches (kube-controller-manager, kube-scheduler, karpenter-kwok, crds), to
# pass as DROVER_KARPENTER; progress goes to stderr. The e2e test is
# skipped while these are not cached, so a cold `make test` never waits
# for them; `make testbin-karpenter` runs this and CI runs it before `make
# test`.
#
# Environment: DROVER_TESTBIN_CACHE, DROVER_TESTBIN_P, DROVER_TESTBIN_FORCE
# and DROVER_TESTBIN_KEEP (lib.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/kube-wrapper.sh"
KARPENTER_VERSION="1.6.0" # sigs.k8s.io/karpenter

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
testbin_init testbin-karpenter
KCM_DEST="${CACHE_ROOT}/kube-controller-manager-${K8S_VERSION}"
SCHED_DEST="${CACHE_ROOT}/kube-scheduler-${K8S_VERSION}"
KARP_DEST="${CACHE_ROOT}/karpenter-kwok-${KARPENTER_VERSION}"
DEST="${CACHE_ROOT}/autoscaler-k8s-${K8S_VERSION}-karpenter-${KARPENTER_VERSION}"
KARP_WANT="karpenter-kwok v${KARPENTER_VERSION}"

kube_ok() { # kube_ok DIR NAME
	[[ -x "$1/$2" ]] || return 1
	[[ "$("$1/$2" --version 2>&1)" == "Kubernetes v${K8S_VERSION}" ]]
}
karp_ok() {
	[[ -x "${KARP_DEST}/karpenter-kwok" ]] || return 1
	[[ -s "${KARP_DEST}/crds/karpenter.sh_nodepools.yaml" && -s "${KARP_DEST}/crds/karpenter.kwok.sh_kwoknodeclasses.yaml" ]] || return 1
	[[ "$(cat "${KARP_DEST}/VERSION" 2>/dev/null)" == "${KARP_WANT}" ]]
}
cache_ok() {
	kube_ok "${KCM_DEST}" kube-controller-manager && kube_ok "${SCHED_DEST}" kube-scheduler && karp_ok
}
cache_print() {
	mkdir -p "${DEST}"
	ln -sfn "${KCM_DEST}/kube-controller-manager" "${DEST}/kube-controller-manager"
	ln -sfn "${SCHED_DEST}/kube-scheduler" "${DEST}/kube-scheduler"
	ln -sfn "${KARP_DEST}/karpenter-kwok" "${DEST}/karpenter-kwok"
	ln -sfn "${KARP_DEST}/crds" "${DEST}/crds"
	echo "${DEST}"
}

testbin_begin karpenter
export GOFLAGS="-mod=mod -buildvcs=false"

build_kube() {
	local T=${SECONDS} pkgs=()
	{ [[ "${FORCE}" == "1" ]] || ! kube_ok "${KCM_DEST}" kube-controller-manager; } && pkgs+=(k8s.io/kubernetes/cmd/kube-controller-manager)
	{ [[ "${FORCE}" == "1" ]] || ! kube_ok "${SCHED_DEST}" kube-scheduler; } && pkgs+=(k8s.io/kubernetes/cmd/kube-scheduler)
	((${#pkgs[@]} > 0)) || return 0
	kube_wrapper "${WORK}/kube" "${pkgs[@]}"
	mkdir -p "${WORK}/kube-out"
	log "kubernetes v${K8S_VERSION}: building ${pkgs[*]} with -p ${BUILD_P} under nice (shares build.sh's Go build cache)"
	(cd "${WORK}/kube" && nice -n 10 go build -p "${BUILD_P}" -trimpath -ldflags "-s -w${VERSION_LDFLAGS}" \
		-o "${WORK}/kube-out/" "${pkgs[@]}" >&2)
	local p b
	for p in "${pkgs[@]}"; do
		b="${p##*/}"
		"${WORK}/kube-out/${b}" --version >&2
		mkdir -p "${WORK}/${b}"
		mv "${WORK}/kube-out/${b}" "${WORK}/${b}/"
		if [[ "${b}" == kube-controller-manager ]]; then
			testbin_install "${WORK}/${b}" "${KCM_DEST}"
		else
			testbin_install "${WORK}/${b}" "${SCHED_DEST}"
		fi
	done
	log "kubernetes binaries built in $((SECONDS - T))s"
}

build_karpenter() {
	local T=${SECONDS} out="${WORK}/karp" dir
	[[ "${FORCE}" == "1" ]] || ! karp_ok || return 0
	mkdir -p "${out}/bin" "${out}/crds"
	# Karpenter's module has no replace directives, so go install builds it
	# as released, with its own go.sum (no -mod=mod). The main package is
	# the kwok/ directory, so the binary is named kwok; it is renamed so as
	# not to be taken for kwok itself.
	log "karpenter v${KARPENTER_VERSION}: go install sigs.k8s.io/karpenter/kwok with -p ${BUILD_P} under nice"
	GOFLAGS="-buildvcs=false" GOBIN="${out}/bin" nice -n 10 go install -p "${BUILD_P}" -trimpath -ldflags "-s -w" \
		"sigs.k8s.io/karpenter/kwok@v${KARPENTER_VERSION}" >&2
	mv "${out}/bin/kwok" "${out}/karpenter-kwok"
	rmdir "${out}/bin"
	dir="$(module_dir "sigs.k8s.io/karpenter@v${KARPENTER_VERSION}")"
	cp "${dir}"/kwok/charts/crds/karpenter.sh_*.yaml "${dir}"/kwok/apis/crds/karpenter.kwok.sh_*.yaml "${out}/crds/"
	chmod -R u+w "${out}/crds"
	echo "${KARP_WANT}" >"${out}/VERSION"
	testbin_install "${out}" "${KARP_DEST}"
	karp_ok || die "${KARP_DEST} fails the check"
	log "karpenter-kwok built in $((SECONDS - T))s"
}

# Both at once; each logs its own time.
build_kube &
KUBE_PID=$!
build_karpenter &
KARP_PID=$!
rc=0
wait "${KUBE_PID}" || { log "ERROR: the Kubernetes build failed"; rc=1; }
wait "${KARP_PID}" || { log "ERROR: the Karpenter build failed"; rc=1; }
((rc == 0)) || exit 1
testbin_done
