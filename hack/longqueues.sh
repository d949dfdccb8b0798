#!/bin/sh
# hack/longqueues.sh runs BenchmarkLongQueues (internal/exp/baselines,
# issue 23 item 5) through hack/bench.sh and prints a Markdown table of
# each profile's median cpu time per replay on each queue and its ratio to
# fifo's on the same queue, marking ratios above 10 (hack/benchratio).
#
#   hack/longqueues.sh
#
# It runs in two passes, written one after the other into
# docs/bench/DATE-COMMIT[-dirty]-LongQueues.txt (hack/bench.sh's name and
# headers, one header block per pass):
#   1. the presets (BenchmarkLongQueue's) at -benchtime 3x -count 3, so the
#      table's median is over 3 runs of 3 replays' mean each;
#   2. the custom profiles with the hint-less Score plugin (newcomer,
#      k8s-default+newcomer) at DROVER_LONGQUEUES_SLOW (default "1x 1":
#      benchtime and count), because before issue 23's queue they take
#      minutes per replay; set it to "3x 3" once they are fast.
# DROVER_BENCHTIME and DROVER_BENCH_COUNT change pass 1 (default 3x, 3).
# The table (n = runs per cell) goes to stdout; DROVER_BENCH_OUT names
# another output file.
set -eu
cd "$(dirname "$0")/.."
short=$(git rev-parse --short HEAD)
dirty=""
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	dirty="-dirty"
fi
out=${DROVER_BENCH_OUT:-docs/bench/$(date -u +%Y-%m-%d)-$short$dirty-LongQueues.txt}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
presets='fifo|k8s-default|binpack|drf|fitgpp|lrtp|rand|elastic|dragon|tf-operator|specon|default|drover'
custom='newcomer|k8s-default\+newcomer'
set -- ${DROVER_LONGQUEUES_SLOW:-1x 1}
slowtime=$1 slowcount=$2
start=$(date +%s)
status=0
DROVER_BENCH="LongQueues/.*/^($presets)\$" DROVER_BENCH_PKGS=./internal/exp/baselines/ \
	DROVER_BENCHTIME=${DROVER_BENCHTIME:-3x} DROVER_BENCH_COUNT=${DROVER_BENCH_COUNT:-3} \
	DROVER_BENCH_OUT=$tmp/presets.txt hack/bench.sh >/dev/null || status=$?
mid=$(date +%s)
DROVER_BENCH="LongQueues/.*/^($custom)\$" DROVER_BENCH_PKGS=./internal/exp/baselines/ \
	DROVER_BENCHTIME=$slowtime DROVER_BENCH_COUNT=$slowcount \
	DROVER_BENCH_OUT=$tmp/custom.txt hack/bench.sh >/dev/null || status=$?
end=$(date +%s)
{
	cat "$tmp/presets.txt"
	echo "pass-seconds: $((mid - start))"
	echo
	cat "$tmp/custom.txt"
	echo "pass-seconds: $((end - mid))"
} >"$out"
echo "$out ($((end - start)) s: presets $((mid - start)) s, custom profiles $((end - mid)) s)"
echo
go run ./hack/benchratio "$out" || status=$?
exit "$status"
