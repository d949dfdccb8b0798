#!/bin/sh
# SpeCon bulk run (issue 26): 300 seeds of each comparison and of every
# reading, niced, all cores. From the repository root, with
# go build -o drover ./cmd/drover:
set -e
for e in specon-fixed specon-mixed specon-random specon-large specon-readings; do
	nice -n 10 ./drover sim -e "$e" --seeds 300 --format json > "docs/results/$e-300.json"
done
