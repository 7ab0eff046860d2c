"""The tool registry: every analysis page registers its id, options and compute function.

A tool is a pure function ``compute(stores, options) -> dict``: it gets the decoded
profile(s) of the chosen host(s) and parsed options, never a request or a file. The HTTP
layer and the CLI look tools up here, parse options with the declared parsers (a bad value
becomes a 400 naming the option) and memoise results per (stores, tool, options).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


class OptionError(ValueError):
    """An option value that does not parse (HTTP 400)."""


@dataclass(frozen=True)
class Option:
    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str = ""


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    compute: Callable[[Sequence[Any], Mapping[str, Any]], dict[str, Any]]
    # Whether a store has data for this tool (listed in `runs`); cheap, no full analysis.
    available: Callable[[Any], bool] = lambda store: True
    options: tuple[Option, ...] = ()
    multi_host: bool = False  # accepts several hosts at once ("all hosts")
    aliases: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("xspace",)  # store formats the tool reads
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def parse_options(self, raw: Mapping[str, str]) -> dict[str, Any]:
        parsed: dict[str, Any] = {}
        for opt in self.options:
            if opt.name in raw and raw[opt.name] != "":
                try:
                    parsed[opt.name] = opt.parse(raw[opt.name])
                except (ValueError, TypeError) as e:
                    raise OptionError(f"option {opt.name}={raw[opt.name]!r} is invalid: {e}") from e
            else:
                parsed[opt.name] = opt.default
        return parsed


_TOOLS: dict[str, Tool] = {}
# Derived values that most tools of a store need (the step assignment): computed in the
# background as soon as a store is loaded, so the first page asked for does not wait for them.
WARMUPS: list[Callable[[Any], Any]] = []


def register_warmup(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    WARMUPS.append(fn)
    return fn

_ALIASES: dict[str, str] = {}


def register(tool: Tool) -> Tool:
    _TOOLS[tool.name] = tool
    for alias in tool.aliases:
        _ALIASES[alias] = tool.name
    return tool


def get(name: str) -> Tool | None:
    _load_all()
    return _TOOLS.get(_ALIASES.get(name, name))


# The order users know from XProf's tool menu; a run's first listed tool is the page the
# dashboard opens by default. Tools not named here follow in registration order.
TOOL_ORDER = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "memory_profile",
              "pod_viewer", "tf_data_bottleneck_analysis", "op_profile", "trace_viewer")


def all_tools() -> list[Tool]:
    _load_all()
    rank = {name: i for i, name in enumerate(TOOL_ORDER)}
    tools = list(_TOOLS.values())
    return sorted(tools, key=lambda t: (rank.get(t.name, len(TOOL_ORDER)), tools.index(t)))


def _load_all() -> None:
    # Importing the package registers every tool module listed in analyses/__init__.py.
    import tbprof.analyses  # noqa: F401


def parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true/false")


def parse_nonneg_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def parse_float(text: str) -> float:
    value = float(text)
    if value != value:
        raise ValueError("must be a number")
    return value
