#!/usr/bin/env bash
# Installs tbprof into a local venv and starts TensorBoard with it on demo_logs/ (real profiles).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv --system-site-packages .venv || {
  apt-get install -y -qq python3-venv >/dev/null && "$PY" -m venv --system-site-packages .venv; }
# The [sql] extra: the Query page runs on DuckDB.
.venv/bin/python -m pip install -q --disable-pip-version-check ".[sql]"
exec .venv/bin/python -m tensorboard.main --logdir demo_logs --port "${PORT:-6006}" "$@"
