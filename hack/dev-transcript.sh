#!/bin/bash
# hack/dev-transcript.sh prints the transcript docs/kubernetes.md shows for
# examples/ on the dev cluster: with `make dev-cluster` running (and its
# KUBECONFIG, default /tmp/drover-dev-cluster.kubeconfig), it applies
# examples/, shows `kubectl get tj -o wide` 13, 20, 51 and 60 s after the
# apply, waits until every job has succeeded (at most 10 minutes), then
# shows the jobs, the Events and SpeCon's columns. kubectl is the one
# hack/testbin/build.sh builds (v1.34.4).
#
#   make dev-cluster &    # wait for "dev cluster up"
#   hack/dev-transcript.sh > /tmp/transcript.txt
set -u
cd "$(dirname "$0")/.."
export KUBECONFIG=${KUBECONFIG:-/tmp/drover-dev-cluster.kubeconfig}
K="$(hack/testbin/build.sh | tail -n 1)/kubectl"
echo '$ kubectl apply -f examples/'
"$K" apply -f examples/ 2>&1
t0=$(date +%s)
for at in 13 20 51 60; do
	while [ $(($(date +%s) - t0)) -lt $at ]; do sleep 0.2; done
	echo
	echo "\$ kubectl get tj -o wide                # $at s after the apply"
	"$K" get tj -o wide
done
while "$K" get tj --no-headers | grep -qv Succeeded; do
	if [ $(($(date +%s) - t0)) -gt 600 ]; then
		echo "hack/dev-transcript.sh: jobs still running after 10 minutes" >&2
		exit 1
	fi
	sleep 2
done
echo
echo '$ kubectl get tj                        # at the end'
"$K" get tj
echo
echo '$ kubectl get events --sort-by=.firstTimestamp'
"$K" get events --sort-by=.firstTimestamp
cols=NAME:.metadata.name,PHASE:.status.phase,RESIZES:.status.resizes,MIGRATIONS:.status.migrations,CATEGORY:.status.progressCategory
echo
echo "\$ kubectl get tj -o custom-columns=$cols"
"$K" get tj -o custom-columns=$cols
