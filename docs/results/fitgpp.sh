#!/bin/sh
# FitGpp runs of docs/fitgpp.md (issue 26), niced. From the repository
# root, with go build -o drover ./cmd/drover:
set -e
nice -n 10 ./drover sim -e fitgpp --format json > docs/results/fitgpp.json
nice -n 10 ./drover sim -e fitgpp-te-work --format json > docs/results/fitgpp-te-work.json
