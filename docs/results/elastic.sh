#!/bin/sh
# Elastic runs of docs/elastic.md (issue 26: the node-by-node scale-up
# variant), niced. From the repository root, with
# go build -o drover ./cmd/drover:
set -e
for e in elastic-1 elastic-2 elastic-3 elastic-gamma elastic-philly; do
	nice -n 10 ./drover sim -e "$e" --format json > "docs/results/$e.json"
done
