#!/bin/sh
# OASiS runs of docs/oasis.md (issue 26), niced. From the repository
# root, with go build -o drover ./cmd/drover:
set -e
nice -n 10 ./drover sim -e oasis-readings --format json > docs/results/oasis-readings.json
nice -n 10 ./drover sim -e oasis-readings --seeds 30 --format json > docs/results/oasis-readings-30.json
