"""The README and the reference docs it links to stay true: what they show works as shown.

- The README opens with the two commands the project requires, the demo and the whole test
  run, and ``.ci/run`` runs that same test command.
- Every file, picture and doc they name exists; the pictures are PNGs small enough for git.
- Every ``tbprof`` command line they show parses, every flag they name is a flag of its command
  (TensorBoard's ``--tbprof_*`` flags included), every ``$TBPROF_*`` variable is one the package
  reads, and every variable the package reads is documented.
- The example logdir tree is ``demo_logs/`` as tbprof lists it: the files exist and each named
  run has the hosts the tree says.
- The JAX and TensorFlow recording snippets, run as they stand, write a profile that tbprof opens
  with the steps they mark (slow: each imports its framework). PyTorch is not a test dependency,
  so its snippet is only compiled.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import tbprof
from tbprof.cli.main import COMMANDS, build_parser
from tbprof.tb_plugin import TbprofLoader

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
CLI_DOC = REPO / "docs" / "cli.md"
# The reference material the README points to for what it leaves out.
REFERENCE_DOCS = tuple(REPO / "docs" / name for name in
                       ("cli.md", "inputs.md", "pages.md", "cache_and_memory.md", "server.md"))
MAX_PICTURE_BYTES = 200 * 1024

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)#\s]+)\)")  # [text](target) and ![alt](target): local targets
_NAMED_PATH = re.compile(r"`((?:docs|bench|scripts|tests|frontend|plugin|demo_logs)/[\w./-]*)`")
_TBPROF_LINE = re.compile(r"`(tbprof [^`]+)`")
_ENV = re.compile(r"\bTBPROF_[A-Z][A-Z0-9_]*[A-Z0-9]\b")


def _blocks(text: str, language: str | None = None) -> list[str]:
    return [body for lang, body in _FENCE.findall(text) if language is None or lang == language]


def _commands(block: str) -> list[str]:
    """The command lines of a shell block, each without its trailing ``# comment``."""
    lines = []
    for line in block.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command and not command.startswith("#"):
            lines.append(command)
    return lines


def test_readme_opens_with_the_demo_and_the_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    first, second = _blocks(text)[:2]
    assert _commands(first) == ["./scripts/demo.sh"]
    assert _commands(second) == ["./scripts/test.sh"]
    assert text.index("```") > text.index("## Try it") > 0  # no other command comes first
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert os.access(REPO / script, os.X_OK), script
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^exec \./scripts/test\.sh$", ci, re.MULTILINE), "`.ci/run` runs the README's test command"


@pytest.mark.parametrize("doc", [README, *REFERENCE_DOCS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_file_named_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    named = {t for t in _LINK.findall(text) if "://" not in t} | set(_NAMED_PATH.findall(text))
    assert named, "the doc names no file: the pattern is wrong"
    missing = sorted(n for n in named if not (REPO / n.rstrip("/")).exists())
    assert missing == []


def test_pictures_are_small_pngs() -> None:
    pictures = [t for t in _LINK.findall(README.read_text(encoding="utf-8")) if t.endswith(".png")]
    assert len(pictures) >= 2
    for picture in pictures:
        data = (REPO / picture).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", picture
        assert len(data) <= MAX_PICTURE_BYTES, picture


def _shown_command_lines() -> list[str]:
    """Every ``tbprof ...`` command the README's shell blocks run."""
    return [c for block in _blocks(README.read_text(encoding="utf-8"), "sh") for c in _commands(block)
            if c.startswith("tbprof ")]


def test_readme_command_lines_parse() -> None:
    lines = _shown_command_lines()
    assert lines, "the quick start shows a tbprof command"
    for line in lines:
        argv = shlex.split(line)[1:]
        args = build_parser(argv[0]).parse_args(argv)  # exits (a failure here) on a bad flag
        assert args.command == argv[0]


def _mentioned_flags() -> list[tuple[str, str]]:
    """(command, flag) for every ``--flag`` written inside a backticked ``tbprof COMMAND …``."""
    found = []
    for doc in (README, CLI_DOC):
        for usage in _TBPROF_LINE.findall(doc.read_text(encoding="utf-8")):
            command = usage.split()[1]
            if not command.isupper():  # `tbprof COMMAND --help`: a placeholder, not a command
                found += [(command, flag) for flag in re.findall(r"--[a-z][a-z-]*", usage)]
    return found


def test_every_documented_flag_exists() -> None:
    mentioned = _mentioned_flags()
    assert {command for command, _ in mentioned} >= {"serve", "show", "summary", "capture", "sql", "check"}
    unknown = []
    for command, flag in mentioned:
        assert command in COMMANDS, command
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        if flag not in sub._option_string_actions:
            unknown.append((command, flag))
    assert unknown == []


def test_every_documented_tensorboard_flag_exists() -> None:
    parser = argparse.ArgumentParser()
    TbprofLoader().define_flags(parser)
    defined = {s for a in parser._actions for s in a.option_strings if s.startswith("--tbprof_")}
    documented = set(re.findall(r"--tbprof_[a-z_]+", CLI_DOC.read_text(encoding="utf-8")))
    assert documented == defined


def _package_env_vars() -> set[str]:
    names: set[str] = set()
    for f in (REPO / "plugin" / "tbprof").rglob("*"):
        if f.suffix in (".py", ".pyx"):
            names |= set(_ENV.findall(f.read_text(encoding="utf-8")))
    return names


def test_environment_variables_are_the_packages() -> None:
    read = _package_env_vars()
    documented = set(_ENV.findall(CLI_DOC.read_text(encoding="utf-8")))
    mentioned = set().union(*(_ENV.findall(d.read_text(encoding="utf-8")) for d in (README, *REFERENCE_DOCS)))
    assert mentioned - read == set(), "a doc names a variable the package does not read"
    assert read - documented == set(), "docs/cli.md lists every variable the package reads"


def test_fast_loop_names_real_markers_and_paths() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    markers = set(re.findall(r'^\s*"(\w+): ', pyproject, re.MULTILINE))
    loop = [c for block in _blocks(README.read_text(encoding="utf-8"), "sh") for c in _commands(block)
            if "pytest" in c]
    assert loop, "the README shows the fast test loop"
    for command in loop:
        argv = shlex.split(command)
        selection = argv[argv.index("-m", argv.index("pytest")) + 1]  # pytest's -m, not python's
        assert set(re.findall(r"\w+", selection)) - {"not", "and", "or"} <= markers
        assert all((REPO / a).exists() for a in argv if a.startswith("tests/"))


_TREE_LINE = re.compile(r"^(?P<indent>(?:[│ ] {3})*)[├└]── (?P<name>\S+)(?P<rest>.*)$")


def _tree() -> list[tuple[Path, str]]:
    """(path below the repository, annotation) of each entry of the README's logdir tree."""
    text = README.read_text(encoding="utf-8")
    (block,) = [b for b in _blocks(text) if b.startswith("demo_logs/\n")]
    entries: list[tuple[Path, str]] = []
    parents: list[Path] = [Path("demo_logs")]
    for line in block.splitlines()[1:]:
        m = _TREE_LINE.match(line)
        assert m, line
        depth = len(m["indent"]) // 4
        path = parents[depth] / m["name"].rstrip("/")
        del parents[depth + 1:]
        parents.append(path)
        rest = m["rest"].strip()
        if rest.startswith("... "):  # "a ... b": both ends of a numbered series
            entries.append((path.parent / rest.split()[1], ""))
            rest = ""
        entries.append((path, rest))
    return entries


def test_logdir_tree_is_demo_logs(cache_dir: Path) -> None:
    entries = _tree()
    assert len(entries) >= 8
    assert [p for p, _ in entries if not (REPO / p).exists()] == []
    runs = 0
    for _, note in entries:
        m = re.match(r'run "([^"]+)"(?:, hosts? ((?:"[^"]+" ?)+))?', note)
        if not m:
            continue
        profile = tbprof.open(REPO / "demo_logs", run=m[1], cache_dir=cache_dir)  # NotFound for a wrong name
        if m[2]:
            assert profile.hosts == re.findall(r'"([^"]+)"', m[2])
        runs += 1
    assert runs >= 4


def _snippet(marker: str) -> str:
    (code,) = [b for b in _blocks(README.read_text(encoding="utf-8"), "python") if marker in b]
    return code


def test_pytorch_snippet_compiles() -> None:
    compile(_snippet("torch.profiler"), "README.md (PyTorch)", "exec")


# Each snippet marks 10 steps; with more than 5 steps the boundary rule drops the first and the
# last (docs/formulas.md, "Boundary rule"), as the README says: 10 - 2 = 8.
MARKED_STEPS = 10
SHOWN_STEPS = MARKED_STEPS - 2


@pytest.mark.slow
@pytest.mark.parametrize(("marker", "logdir"), [("jax.profiler", "logs/jax"), ("tf.profiler", "logs/tf")])
def test_recording_snippet_writes_a_profile_tbprof_opens(marker: str, logdir: str, tmp_path: Path,
                                                         cache_dir: Path) -> None:
    code = _snippet(marker)
    assert f"range({MARKED_STEPS})" in code
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert list((tmp_path / logdir).glob("plugins/profile/*/*.xplane.pb")), "the layout the README shows"
    summary = tbprof.open(tmp_path / logdir, cache_dir=cache_dir).summary()
    assert summary["step_confidence"] == "markers"
    assert summary["step_count"] == SHOWN_STEPS


def test_every_extra_named_is_an_extra() -> None:
    setup = (REPO / "setup.py").read_text(encoding="utf-8")
    extras = set(re.findall(r'^\s+"([\w-]+)": \[', setup[setup.index("extras_require"):], re.MULTILINE))
    named: set[str] = set()
    for doc in (README, *REFERENCE_DOCS):
        for group in re.findall(r'(?:tbprof|\.)\[([\w,-]+)\]', doc.read_text(encoding="utf-8")):
            named |= set(group.split(","))
    assert named >= {"sql", "pandas", "remote", "agent", "distributed", "test"}
    assert named - extras == set()
