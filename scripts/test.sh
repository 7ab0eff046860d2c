#!/usr/bin/env bash
# Installs everything the tests need, then runs every test:
# lint and types, Python tests (real TensorBoard, real browser, real TF profiler server),
# frontend unit tests, and the check that the committed bundle equals a fresh build.
# Works on a fresh Debian machine with Python 3.11, Node 20 and root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

# 1. Debian's chromium drives the browser tests (Playwright never downloads a browser here).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "tbprof tests need Debian's chromium: sudo apt-get install chromium" >&2; exit 1
  fi
fi

# 2. Python: a venv that may reuse packages already on the machine (e.g. TensorFlow), with
#    the package in editable mode and the test extras (pytest, ruff, mypy, playwright, moto, tensorflow-cpu,
#    jax[cpu]) plus the remote-storage (s3fs, gcsfs) and Dask extras their tests exercise.
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv --system-site-packages .venv 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      "$PY" -m venv --system-site-packages .venv
    else
      echo "cannot create a venv: install python3-venv" >&2; exit 1
    fi
  fi
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -m pip install -q --disable-pip-version-check -e ".[test,capture-test,remote,distributed]"

# 3. Frontend: locked dependencies, lint, types, unit tests, bundle freshness.
if [ -f frontend/package.json ]; then
  (cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run lint && npm run typecheck && npm test)
  bash frontend/scripts/check_bundle_fresh.sh
fi

# 4. Python: lint, types, and every test (unit, HTTP, real servers, capture, browser).
"$VPY" -m ruff check plugin tests bench scripts
"$VPY" -m mypy
"$ROOT/.venv/bin/lint-imports"  # layers import only downward (pyproject.toml [tool.importlinter])
exec "$VPY" -m pytest -q "$@"
