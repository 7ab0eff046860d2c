"""The one detector (readers/sniff.file_kind): a file's kind from its bytes, its name a hint.

Real profiles from demo_logs/ saved under misleading names, plain and gzip: each is found as
the kind its bytes are, in a folder walk and as a single path, and its reader reads it.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from tbprof.readers.kinds import KINDS
from tbprof.readers.sniff import XSPACE, file_kind, kind_of_head
from tbprof.service.logdir import discover, runs_for_path

DEMO = Path(__file__).resolve().parent.parent.parent / "demo_logs"
XPLANE = DEMO / "custom_loop" / "plugins" / "profile" / "2026_11_26_00_33_59" / "vm.xplane.pb"
KINETO = DEMO / "torch_cnn" / "vm_623.1795653166121542717.pt.trace.json"
TF1 = DEMO / "tf1_timeline" / "timeline-3.json"
TFPROF_TIMELINE = DEMO / "tf1_timeline" / "tfprof_timeline.json_3"
TFPROF_PROFILE = DEMO / "tf1_timeline" / "profile.pb"

# (source, the misleading name it is saved under, gzip it, the kind its bytes are, its host)
RENAMED = [
    (XPLANE, "vm.json", False, "xspace", "vm"),
    (XPLANE, "worker.trace.json", False, "xspace", "worker"),
    (KINETO, "timeline-3.json", False, "pytorch", "timeline-3"),
    (KINETO, "timeline-3.json.gz", True, "pytorch", "timeline-3"),
    (TF1, "x.pt.trace.json", False, "tf1_timeline", "x"),
    (TF1, "x.pt.trace.json.gz", True, "tf1_timeline", "x"),
    (TF1, "rank-0.json", False, "tf1_timeline", "rank-0"),
    (TFPROF_TIMELINE, "trace.json", False, "tfprof_timeline", "trace"),
]


def _save(src: Path, folder: Path, name: str, gzipped: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / name
    if gzipped:
        dest.write_bytes(gzip.compress(src.read_bytes()))
    else:
        shutil.copyfile(src, dest)
    return dest


@pytest.mark.parametrize(("src", "name", "gzipped", "kind", "host"), RENAMED, ids=[r[1] for r in RENAMED])
def test_a_wrongly_named_file_gets_the_kind_of_its_bytes(tmp_path: Path, src: Path, name: str, gzipped: bool,
                                                         kind: str, host: str) -> None:
    path = _save(src, tmp_path / "logs" / "run", name, gzipped)
    assert file_kind(path.parent, path.name) == (kind, host)
    (found,) = discover(tmp_path / "logs").values()  # a folder walk
    assert (found.kind, list(found.hosts)) == (kind, [host])
    (single,) = runs_for_path(path).values()  # the file as a single path
    assert (single.kind, list(single.hosts)) == (kind, [host])
    store = KINDS[kind].reader(path)  # and the reader of that kind reads it
    assert store.n_events > 0


def test_the_right_names_are_unchanged(tmp_path: Path) -> None:
    for src, name in ((XPLANE, "vm.xplane.pb"), (KINETO, "a.pt.trace.json"), (TF1, "timeline-3.json"),
                      (TFPROF_TIMELINE, "tfprof_timeline.json_3"), (TFPROF_PROFILE, "profile.pb")):
        _save(src, tmp_path, name, False)
    kinds = {name: file_kind(tmp_path, name) for name in sorted(p.name for p in tmp_path.iterdir())}
    assert kinds == {"vm.xplane.pb": ("xspace", "vm"), "a.pt.trace.json": ("pytorch", "a"),
                     "timeline-3.json": ("tf1_timeline", "timeline-3"),
                     "tfprof_timeline.json_3": ("tfprof_timeline", "tfprof_timeline.json_3"),
                     "profile.pb": ("tfprof", "profile.pb")}


def test_a_tfprof_profile_is_no_xspace() -> None:
    """Both protobufs open with field 1, length-delimited: the bytes after it tell them apart."""
    head = TFPROF_PROFILE.read_bytes()[: 64 << 10]
    assert head[:1] == b"\x0a"  # the node map: the same first tag as an XSpace's planes
    assert kind_of_head(head) is None
    assert kind_of_head(XPLANE.read_bytes()[: 64 << 10]) == XSPACE


def test_a_plain_chrome_trace_named_as_a_step_file_keeps_its_names_kind(tmp_path: Path) -> None:
    """The bytes of a Chrome trace that is no Kineto, TF1 or tfprof trace leave the kind open."""
    trace = b'{"traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'
    for name, kind, host in (("timeline-7.json", "tf1_timeline", "timeline-7"), ("h.pt.trace.json", "pytorch", "h"),
                             ("h.trace.json", "chrome_trace", "h"), ("anything.json", "chrome_trace", "anything")):
        (tmp_path / name).write_bytes(trace)
        assert file_kind(tmp_path, name) == (kind, host)


def test_a_gzipped_xspace_is_no_run(tmp_path: Path) -> None:
    """The XSpace readers take plain bytes only: a gzipped one is not offered as a run."""
    path = _save(XPLANE, tmp_path, "vm.json.gz", True)
    assert file_kind(tmp_path, path.name) is None
    assert discover(tmp_path) == {}


def test_kinds_are_found_in_one_place() -> None:
    """The detector (sniff.file_kind) is the only reader of the name hints and of the head test,
    and readers/kinds.py's folder_runs (through DETECTORS, for folders and single paths) its only
    caller: no other module decides a kind from a name or from bytes."""
    import ast

    package = Path(__file__).resolve().parents[2] / "plugin" / "tbprof"
    users: dict[str, set[str]] = {"name_hint": set(), "kind_of_head": set(), "file_kind": set(), "sniff": set()}
    for path in package.rglob("*.py"):
        if "protos" in path.parts:
            continue
        module = path.relative_to(package).with_suffix("").as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name in users:
                users[name].add(module)
    assert users["name_hint"] == {"readers/sniff"}
    assert users["kind_of_head"] == {"readers/sniff"}
    assert users["file_kind"] == {"readers/kinds"}
    assert users["sniff"] == {"readers/sniff"}
