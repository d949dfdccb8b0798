#!/usr/bin/env bash
# Installs Debian's PyTorch (python3-torch, CPU) for the examples/pytorch
# end-to-end test (pkg/k8s/e2e TestPyTorchTrainerPreemptedAndResumed),
# unless a python3 that imports torch is already there. Idempotent: apt
# keeps what it installed, so a second run does nothing. Cold, on the
# 2-core development machine: 446 s including apt-get update (measured
# 2026-11-28; docs/trainer.md).
set -euo pipefail
for py in "${DROVER_PYTHON:-}" python3 /usr/bin/python3; do
	if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' 2>/dev/null; then
		echo "[python-torch] cached: $(command -v "$py") imports torch $("$py" -c 'import torch; print(torch.__version__)')"
		exit 0
	fi
done
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[python-torch] no python3 with torch and no apt-get: install PyTorch for python3 (or set DROVER_PYTHON); the PyTorch e2e test is skipped without it" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
start=$(date +%s)
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y python3-torch
echo "[python-torch] installed python3-torch in $(( $(date +%s) - start )) s: /usr/bin/python3 $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
