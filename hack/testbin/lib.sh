# Sourced (not run) by the testbin scripts (build.sh, helm.sh, operator.sh,
# kueue.sh, karpenter.sh, bench.sh): the one copy of what each does around
# its own build — the cache root, the check-lock-check dance, the temporary
# build directory inside the cache root, the Go environment, and the atomic
# install by rename — so that a fix to any of it reaches every script.
#
# A script sources this, calls testbin_init TAG, defines
#
#   cache_ok     succeeds when the cache holds what the script builds
#   cache_print  prints the script's LAST stdout line (the path it gives)
#
# then calls testbin_begin NAME (which exits 0 at once on a good cache),
# builds into "${WORK}", installs with testbin_install, and ends with
# testbin_done.
#
# Environment, for every script:
#   DROVER_TESTBIN_CACHE   cache root (default: $HOME/.cache/drover/testbin)
#   DROVER_TESTBIN_P       go build -p parallelism (default: 2)
#   DROVER_TESTBIN_FORCE   set to 1 to rebuild even if the cache looks good
#   DROVER_TESTBIN_KEEP    set to 1 to keep the temporary build dir (debugging)

# log and die write progress to stderr, tagged with the script's TAG: stdout
# carries only the path the caller reads with `tail -n 1`.
log() { printf '[%s] %s\n' "${TESTBIN_TAG:-testbin}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# testbin_init TAG sets TESTBIN_TAG, CACHE_ROOT (created, physical path),
# BUILD_P and FORCE, and checks that go is on PATH.
testbin_init() {
	TESTBIN_TAG="$1"
	CACHE_ROOT="${DROVER_TESTBIN_CACHE:-${HOME}/.cache/drover/testbin}"
	BUILD_P="${DROVER_TESTBIN_P:-2}"
	FORCE="${DROVER_TESTBIN_FORCE:-0}"
	command -v go >/dev/null 2>&1 || die "go is not on PATH"
	mkdir -p "${CACHE_ROOT}"
	CACHE_ROOT="$(cd "${CACHE_ROOT}" && pwd -P)"
}

# testbin_cached WHAT prints the cache's path and exits 0 when the cache is
# good and no rebuild is forced (logging "WHAT: PATH"); otherwise it returns.
testbin_cached() {
	local path
	if [[ "${FORCE}" != "1" ]] && cache_ok; then
		path="$(cache_print)"
		log "$1: ${path}"
		echo "${path}"
		exit 0
	fi
}

# testbin_begin NAME: exits 0 at once on a good cache. Otherwise it takes
# CACHE_ROOT/.lock-NAME, so that two builders of one part (two test runs
# started at once) build it once: the second waits, then finds the cache
# filled. Holding the lock, it removes the build dirs of killed builds,
# makes WORK (a temporary dir inside the cache root, so that installing is
# a rename on one filesystem and an interrupted build never leaves a half
# cache; removed on exit unless DROVER_TESTBIN_KEEP=1), exports the Go
# environment of a reproducible module build and sets START.
testbin_begin() {
	local name="$1"
	testbin_cached cached
	exec 9>"${CACHE_ROOT}/.lock-${name}"
	if command -v flock >/dev/null 2>&1; then
		if ! flock -n 9; then
			log "another build holds ${CACHE_ROOT}/.lock-${name}; waiting for it"
			flock 9
		fi
		testbin_cached "cached (built by another process)"
		rm -rf "${CACHE_ROOT}/.build-${name}."*
	fi
	WORK="$(mktemp -d "${CACHE_ROOT}/.build-${name}.XXXXXX")"
	trap testbin_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	export GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GO111MODULE=on
	export GOFLAGS="-buildvcs=false"
	START=${SECONDS}
}

testbin_cleanup() {
	if [[ "${DROVER_TESTBIN_KEEP:-0}" == "1" ]]; then
		log "keeping ${WORK}"
	else
		rm -rf "${WORK}"
	fi
}

# testbin_install SRC DEST renames the built directory SRC to DEST; a stale
# or broken DEST is moved into WORK first (removed on exit).
testbin_install() {
	if [[ -e "$2" ]]; then
		mv -T "$2" "${WORK}/old-$(basename "$2")"
	fi
	mv -T "$1" "$2"
}

# testbin_done checks the installed cache, logs the total time and prints
# the path (the LAST line of stdout).
testbin_done() {
	local path
	cache_ok || die "the installed files fail the check"
	path="$(cache_print)"
	log "installed: ${path} ($((SECONDS - START))s)"
	echo "${path}"
}

# module_dir MODULE@VERSION prints the module's directory in the module
# cache, downloading it if needed (for the CRDs and manifests a release
# ships beside its code).
module_dir() {
	local dir
	dir="$(cd "${WORK}" && GOFLAGS="" go mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
	[[ -d "${dir}" ]] || die "cannot find $1 in the module cache"
	printf '%s\n' "${dir}"
}
