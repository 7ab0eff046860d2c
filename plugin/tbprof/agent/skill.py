"""``tbprof install-skill DIR``: copies the skill (``agent/skill/``: SKILL.md and its references)
into DIR/tbprof/, where a coding agent that reads skills finds it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SKILL_NAME = "tbprof"


def skill_files() -> dict[str, str]:
    """Relative path -> text of every file of the skill."""
    root = resources.files("tbprof.agent") / "skill"
    out = {"SKILL.md": (root / "SKILL.md").read_text(encoding="utf-8")}
    refs = root / "references"
    for entry in sorted(refs.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            out[f"references/{entry.name}"] = entry.read_text(encoding="utf-8")
    return out


def install(skills_dir: Path, force: bool = False) -> list[Path]:
    """Writes the skill under ``skills_dir/tbprof``; refuses to overwrite one unless ``force``."""
    target = skills_dir / SKILL_NAME
    if (target / "SKILL.md").exists() and not force:
        raise FileExistsError(str(target / "SKILL.md"))
    written = []
    for rel, text in skill_files().items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
