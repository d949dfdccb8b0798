#!/bin/sh
# hack/bench.sh runs Go benchmarks and writes their output, in benchstat's
# format, to docs/bench/DATE-COMMIT[-PATTERN].txt (DATE in UTC; "-dirty"
# when the work tree has uncommitted changes; PATTERN is DROVER_BENCH's,
# when set, with other characters than letters and digits as dashes),
# headed by configuration lines that
# benchstat reads as keys: the commit, the date, the machine and the load
# average (uptime) before and after. docs quote these files.
#
#   hack/bench.sh                                   # every benchmark, -benchtime 3x
#   DROVER_BENCH=LongQueue DROVER_BENCH_PKGS=./internal/exp/baselines/ \
#     DROVER_BENCHTIME=1x hack/bench.sh            # one benchmark
#
# DROVER_BENCH (the -bench pattern, default .), DROVER_BENCHTIME (3x),
# DROVER_BENCH_COUNT (1), DROVER_BENCH_PKGS (./...) and DROVER_BENCH_OUT
# (the file) tune it. API-server benchmarks need KUBEBUILDER_ASSETS (make
# bench sets it) and are skipped without it.
set -eu
cd "$(dirname "$0")/.."
commit=$(git rev-parse HEAD)
short=$(git rev-parse --short HEAD)
dirty=""
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	dirty="-dirty"
fi
# A run of some benchmarks only is named after its pattern too.
slug=""
if [ -n "${DROVER_BENCH:-}" ]; then
	slug=-$(printf '%s' "$DROVER_BENCH" | tr -c 'A-Za-z0-9' '-' | tr -s '-' | sed 's/^-//; s/-$//')
fi
out=${DROVER_BENCH_OUT:-docs/bench/$(date -u +%Y-%m-%d)-$short$dirty$slug.txt}
mkdir -p "$(dirname "$out")"
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//' || true)
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || true)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "commit: $commit$dirty"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine: $(uname -m), $(getconf _NPROCESSORS_ONLN) cores, ${cpu:-unknown cpu}, ${mem:-unknown memory}, $(go env GOVERSION)"
	echo "load-before: $(uptime | sed 's/.*load average: //')"
	echo "command: go test -run XXX -bench '${DROVER_BENCH:-.}' -benchtime ${DROVER_BENCHTIME:-3x} -count ${DROVER_BENCH_COUNT:-1} -benchmem ${DROVER_BENCH_PKGS:-./...}"
} >"$tmp"
status=0
# shellcheck disable=SC2086 # the package list is a list
go test -run XXX -bench "${DROVER_BENCH:-.}" -benchtime "${DROVER_BENCHTIME:-3x}" -count "${DROVER_BENCH_COUNT:-1}" \
	-benchmem -timeout 4h ${DROVER_BENCH_PKGS:-./...} >>"$tmp" 2>&1 || status=$?
echo "load-after: $(uptime | sed 's/.*load average: //')" >>"$tmp"
cp "$tmp" "$out"
echo "$out"
exit "$status"
