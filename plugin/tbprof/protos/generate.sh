#!/usr/bin/env bash
# Regenerates *_pb2.py / *_pb2.pyi from the .proto files in this folder.
# Uses grpcio-tools 1.66.2 (protoc 27.2, gencode 5.27.2) on purpose: gencode of that
# age loads on every protobuf runtime from 5.27.2 to 7.x, so TensorFlow's own pin
# and a newer standalone protobuf both work.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${TMPDIR:-/tmp}/tbprof-protoc-venv"
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q grpcio-tools==1.66.2; }
cd "$here"
for proto in *.proto; do
  "$venv/bin/python" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. "$proto"
done
# protoc writes absolute-style imports between our own protos; make them package-relative.
sed -i -E 's/^import ([a-z_]+_pb2) as /from . import \1 as /' ./*_pb2.py
