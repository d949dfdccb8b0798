# Sourced (not run) by build.sh and bench.sh: the Kubernetes version and the
# Go wrapper module that builds commands of k8s.io/kubernetes from Go modules
# (kube-apiserver and kubectl in build.sh, kube-scheduler in bench.sh). The
# caller defines log() and die() and exports the Go environment.

K8S_VERSION="1.34.4"   # k8s.io/kubernetes v$K8S_VERSION

# Staging modules are published as v0.<minor>.<patch> (1.34.4 -> 0.34.4).
STAGING_VERSION="0.${K8S_VERSION#*.}"
K8S_MAJOR="${K8S_VERSION%%.*}"
K8S_MINOR="${K8S_VERSION#*.}"; K8S_MINOR="${K8S_MINOR%%.*}"

# Version strings of the built commands, as `-ldflags -X`.
VERSION_LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	VERSION_LDFLAGS+=" -X ${pkg}.gitVersion=v${K8S_VERSION}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitMajor=${K8S_MAJOR}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitMinor=${K8S_MINOR}"
	VERSION_LDFLAGS+=" -X ${pkg}.gitTreeState=clean"
done
unset pkg

# kube_wrapper DIR PKG...: writes the wrapper module into DIR (go.mod
# requiring k8s.io/kubernetes v$K8S_VERSION with every staging module
# replaced by its published v$STAGING_VERSION, and tools.go importing the
# PKGs), runs go mod tidy and checks that the staging modules resolved to
# the release. The module graph does not depend on PKGs, so every command
# built from it shares the Go build cache.
kube_wrapper() {
	local dir="$1"; shift
	local kmod_json kmod kgo kgodebug m p v
	local -a staging
	log "kubernetes v${K8S_VERSION}: downloading k8s.io/kubernetes to read its go.mod"
	mkdir -p "${dir}"
	kmod_json="$(cd "${dir}" && go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}")" \
		|| die "go mod download k8s.io/kubernetes@v${K8S_VERSION} failed: ${kmod_json:-}"
	kmod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"${kmod_json}")"
	[[ -f "${kmod}" ]] || die "cannot find k8s.io/kubernetes v${K8S_VERSION} go.mod (got '${kmod}')"

	# Staging modules = every `k8s.io/X => ./staging/src/k8s.io/X` replace in
	# kubernetes' go.mod (single-line or block form).
	mapfile -t staging < <(awk '
		/^replace[[:space:]]*\(/ { inblock = 1; next }
		inblock && /^\)/ { inblock = 0; next }
		{
			line = $0
			sub(/^replace[[:space:]]+/, "", line)
			n = split(line, f, /[[:space:]]+/)
			# fields may start with an empty one when the line is indented
			for (i = 1; i <= n; i++) if (f[i] != "") break
			if (f[i+1] == "=>" && f[i+2] ~ /^\.\/staging\//) print f[i]
		}' "${kmod}" | sort -u)
	((${#staging[@]} > 10)) || die "found only ${#staging[@]} staging modules in ${kmod}"
	# Every `k8s.io/* v0.0.0` require must be covered by a staging replace.
	while read -r m; do
		# A here-string, not a pipe: with pipefail, grep -q exiting at the
		# first match can fail the pipe by SIGPIPE in printf (seen under load).
		grep -qxF -- "${m}" <<<"$(printf '%s\n' "${staging[@]}")" || die "required ${m} v0.0.0 has no staging replace"
	done < <(awk '$2 == "v0.0.0" && $1 ~ /^k8s\.io\// { print $1 }' "${kmod}")
	log "kubernetes v${K8S_VERSION}: replacing ${#staging[@]} staging modules with v${STAGING_VERSION}"

	# Mirror kubernetes' own go / godebug lines so runtime defaults match upstream.
	kgo="$(awk '$1 == "go" { print $2; exit }' "${kmod}")"
	kgodebug="$(awk '$1 == "godebug" && $2 != "(" { $1 = ""; sub(/^ /, ""); print; exit }' "${kmod}")"
	{
		echo "module drover.local/testbin/kube"
		echo
		echo "go ${kgo}"
		[[ -n "${kgodebug}" ]] && { echo; echo "godebug ${kgodebug}"; }
		echo
		echo "require k8s.io/kubernetes v${K8S_VERSION}"
		echo
		echo "replace ("
		for m in "${staging[@]}"; do
			printf '\t%s => %s v%s\n' "${m}" "${m}" "${STAGING_VERSION}"
		done
		echo ")"
	} >"${dir}/go.mod"

	{
		echo "//go:build tools"
		echo
		echo "// Package tools pins the commands built from this wrapper module."
		echo "package tools"
		echo
		echo "import ("
		for p in "$@"; do printf '\t_ "%s"\n' "${p}"; done
		echo ")"
	} >"${dir}/tools.go"

	log "kubernetes v${K8S_VERSION}: go mod tidy (downloads a few hundred MB on a cold module cache)"
	(cd "${dir}" && go mod tidy >&2) || die "go mod tidy in ${dir} failed"
	v="$(cd "${dir}" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/apiserver)"
	[[ "${v}" == "v${STAGING_VERSION}" ]] || die "k8s.io/apiserver resolved to ${v}, want v${STAGING_VERSION}"
}
