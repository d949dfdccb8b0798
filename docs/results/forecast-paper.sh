#!/bin/sh
# The paper-sized transformer and LSTM at their full stated budget
# (issue 26 item 6; docs/forecast.md, "The networks as the paper sized
# them"): about 35 CPU-minutes each. From the repository root, with
# go build -o drover ./cmd/drover; the two run at once, niced.
for m in transformer lstm; do
	nice -n 10 /usr/bin/time -f "%e s wall %U s user %S s sys" -o "docs/results/forecast-paper-$m.time" \
		./drover forecast --net paper --models "$m" --multi-step --format json \
		> "docs/results/forecast-paper-$m.json" 2> "docs/results/forecast-paper-$m.err" &
done
wait
