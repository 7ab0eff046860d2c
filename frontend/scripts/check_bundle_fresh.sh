#!/usr/bin/env bash
# Fails when plugin/tbprof/static/ differs from a fresh build of frontend/ (run in CI).
#
#   frontend/scripts/check_bundle_fresh.sh          # npm ci, build into a temp dir, diff
#   SKIP_NPM_CI=1 frontend/scripts/check_bundle_fresh.sh   # reuse node_modules
#
# The build is deterministic (content-hashed chunk names, no timestamps), so any difference
# means someone changed frontend/src without running `npm run build` and committing the result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
committed="$here/../plugin/tbprof/static"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
if [[ "${SKIP_NPM_CI:-0}" != "1" ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
TBPROF_OUT_DIR="$tmp/static" npm run --silent build >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
if ! diff -r "$tmp/static" "$committed" >"$tmp/diff.txt"; then
  echo "plugin/tbprof/static/ is stale: run 'cd frontend && npm ci && npm run build' and commit the result." >&2
  head -n 40 "$tmp/diff.txt" >&2
  exit 1
fi
grep -E "^bundle total" "$tmp/build.log" || true
echo "plugin/tbprof/static/ matches a fresh build."
