#!/bin/sh
# hack/experiments.sh runs every experiment that `drover sim --list` names,
# each at full scale and with --quick, in JSON with the default seeds, for a
# before/after comparison (go run ./hack/expdiff BEFORE AFTER):
#
#   hack/experiments.sh OUTDIR [NAME...]
#
# writes OUTDIR/NAME.json (full scale) and OUTDIR/NAME-quick.json, every
# --quick run first (they are short), then the full-scale runs in the
# list's order. OUTDIR/times.txt gets one line per run, appended as it ends:
#
#   NAME<TAB>full|quick<TAB>SECONDS<TAB>ok|exit N|timeout
#
# and the progress goes to stderr. None is skipped: a run that fails keeps
# its stderr in OUTDIR/NAME[-quick].err (and its output, unless empty, so
# that expdiff lists it as missing) and is marked in times.txt; the script
# exits 1 at the end if any failed. With NAME
# arguments only those experiments run (the lead's reruns).
#
# DROVER is the drover command (default: ./cmd/drover of this tree, built
# once into a temporary directory, which is `go run ./cmd/drover` without
# relinking for every run). DROVER_EXP_TIMEOUT=SECONDS (default 0: none)
# stops a run after that long and marks it "timeout" in times.txt; the
# default runs everything to the end. DROVER_EXP_RESUME=1 keeps runs whose
# output and times.txt line are already there (it says so for each).
# DROVER_EXP_MODES (default "quick full") picks the modes.
set -eu
if [ $# -lt 1 ]; then
	echo "usage: hack/experiments.sh OUTDIR [NAME...]" >&2
	exit 2
fi
out=$1
shift
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
if [ -z "${DROVER:-}" ]; then
	go build -o "$tmpdir/drover" ./cmd/drover
	DROVER=$tmpdir/drover
fi
timeout_s=${DROVER_EXP_TIMEOUT:-0}
modes=${DROVER_EXP_MODES:-quick full}
if [ $# -gt 0 ]; then
	names="$*"
else
	# The names are the first column of the list's EXPERIMENT section,
	# which ends at the first line without a name (before POLICY).
	# shellcheck disable=SC2086 # DROVER may be a command with arguments
	names=$($DROVER sim --list | awk '
		/^EXPERIMENT/ {on = 1; next}
		on && /^[^ \t]/ {print $1; next}
		on {exit}')
fi
if [ -z "$names" ]; then
	echo "experiments.sh: no experiments in \`$DROVER sim --list\`" >&2
	exit 1
fi
total=0
for n in $names; do
	for m in $modes; do
		total=$((total + 1))
	done
done
{
	echo "# drover: $DROVER (this tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "# started: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(getconf _NPROCESSORS_ONLN) cores, load $(uptime | sed 's/.*load average: //')"
} >>"$out/times.txt"
failed=0
i=0
for m in $modes; do
	for n in $names; do
		i=$((i + 1))
		case $m in
		quick) file=$n-quick flag=--quick ;;
		full) file=$n flag= ;;
		*)
			echo "experiments.sh: unknown mode $m in DROVER_EXP_MODES" >&2
			exit 2
			;;
		esac
		if [ "${DROVER_EXP_RESUME:-0}" = 1 ] && [ -s "$out/$file.json" ] &&
			grep -q "^$n	$m	.*	ok\$" "$out/times.txt"; then
			echo "[$i/$total] $n ($m): kept from an earlier run" >&2
			continue
		fi
		echo "[$i/$total] $n ($m) ... $(date -u +%H:%M:%S)" >&2
		start=$(date +%s)
		status=0
		if [ "$timeout_s" -gt 0 ]; then
			# shellcheck disable=SC2086
			timeout "$timeout_s" $DROVER sim -e "$n" $flag --format json >"$out/$file.json" 2>"$out/$file.err" || status=$?
		else
			# shellcheck disable=SC2086
			$DROVER sim -e "$n" $flag --format json >"$out/$file.json" 2>"$out/$file.err" || status=$?
		fi
		secs=$(($(date +%s) - start))
		case $status in
		0) result=ok ;;
		124) result=timeout ;;
		*) result="exit $status" ;;
		esac
		if [ "$status" -ne 0 ]; then
			failed=$((failed + 1))
			# No report at all: no file, so that expdiff lists the
			# run as missing on this side rather than stopping.
			[ -s "$out/$file.json" ] || rm -f "$out/$file.json"
		elif [ ! -s "$out/$file.err" ]; then
			rm -f "$out/$file.err"
		fi
		printf '%s\t%s\t%s\t%s\n' "$n" "$m" "$secs" "$result" >>"$out/times.txt"
		echo "[$i/$total] $n ($m): $result in ${secs}s" >&2
	done
done
echo "# finished: $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(uptime | sed 's/.*load average: //')" >>"$out/times.txt"
if [ "$failed" -gt 0 ]; then
	echo "experiments.sh: $failed of $total runs failed or timed out (times.txt)" >&2
	exit 1
fi
