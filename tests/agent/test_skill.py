"""``tbprof install-skill``: the skill is written where asked, and every ``tbprof`` command it
shows runs on the demo profiles (placeholders replaced by real runs) without a usage error."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tbprof.agent.answers import Agent
from tbprof.agent.server import answer
from tbprof.agent.skill import skill_files
from tbprof.cli.main import main
from tbprof.service.profiles import Profiles

REPO = Path(__file__).resolve().parent.parent.parent
# What a command may exit with: 0; `tbprof check` also 3 (regression) and 4 (no step time).
ALLOWED_EXIT = {"check": {0, 3, 4}}
_FENCE = re.compile(r"```bash\n(.*?)```", re.S)


def skill_commands() -> list[str]:
    out = []
    for text in skill_files().values():
        for block in _FENCE.findall(text):
            out += [line.strip() for line in block.splitlines() if line.strip().startswith("tbprof ")]
    return out


def test_install_writes_the_skill_and_refuses_to_overwrite(tmp_path: Path) -> None:
    assert main(["install-skill", str(tmp_path)]) == 0
    skill = (tmp_path / "tbprof" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: tbprof\ndescription: ")
    for rel in skill_files():
        assert (tmp_path / "tbprof" / rel).is_file()
    assert main(["install-skill", str(tmp_path)]) == 1
    assert main(["install-skill", str(tmp_path), "--force"]) == 0


def test_the_skill_covers_the_four_workflows() -> None:
    commands = " ".join(skill_commands())
    for needed in ("tbprof summary", "tbprof compare", "tbprof check", "tbprof show stragglers", "tbprof sql"):
        assert needed in commands


@pytest.mark.parametrize("command", skill_commands())
def test_every_command_of_the_skill_runs(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(REPO / "demo_logs" / "torch_ddp", logdir / "torch_ddp")
    shutil.copytree(REPO / "demo_logs" / "torch_cnn", logdir / "torch_cnn")
    values = {"$LOGDIR": str(logdir), "$PYTORCH_RUN": "torch_ddp",
              "$BASELINE": str(logdir / "torch_ddp"), "$CANDIDATE": str(logdir / "torch_ddp")}
    argv = shlex.split(command)[1:]
    argv = [values.get(a, a) for a in argv]
    assert not [a for a in argv if a.startswith("$")], f"unknown placeholder in {command!r}"
    code = main([*argv, "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr()
    assert code in ALLOWED_EXIT.get(argv[0], {0}), f"{command!r} exited {code}: {out.err}"
    assert out.out.strip(), f"{command!r} printed nothing"


_MCP_FENCE = re.compile(r"```mcp\n(.*?)```", re.S)


def skill_mcp_calls() -> list[str]:
    return [line.strip() for text in skill_files().values() for block in _MCP_FENCE.findall(text)
            for line in block.splitlines() if line.strip()]


def test_the_skill_shows_mcp_calls() -> None:
    assert {json.loads(c)["tool"] for c in skill_mcp_calls()} >= {"list_runs", "explain_bottleneck", "tool_table",
                                                                  "find_events", "compare_runs", "sql"}


@pytest.mark.parametrize("call", skill_mcp_calls())
def test_every_mcp_call_of_the_skill_answers(call: str, tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(REPO / "demo_logs" / "torch_ddp", logdir / "torch_ddp")
    agent = Agent(Profiles(logdir, cache_dir=tmp_path / "cache"))
    spec = json.loads(call.replace("$PYTORCH_RUN", "torch_ddp"))
    out, is_error = answer(agent, spec["tool"], spec["arguments"])
    assert not is_error, out
