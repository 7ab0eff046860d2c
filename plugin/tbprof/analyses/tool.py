"""What a tool is: its id, options (with parsers) and compute function.

A tool is a pure function ``compute(stores, options) -> R``: it gets the decoded profile(s) of
the chosen host(s) and parsed options, never a request or a file, and returns its result type
``R`` (a TypedDict of ``analyses/results/``, named in its ``result``), so mypy checks what every
producer returns. Each tool module defines its ``TOOLS``; ``service/tools.py`` lists the modules.
The HTTP layer and the CLI parse options with the declared parsers (a bad value becomes a 400
naming the option).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tbprof.errors import BadParameter
from tbprof.store.traits import Trait
from tbprof.store.view import StoreView

SCHEMA_VERSION = 1

# A tool's result: a TypedDict (consistent with Mapping[str, object]) that has the envelope keys.
R = TypeVar("R", bound=Mapping[str, object], covariant=True)


class OptionError(BadParameter):
    """An option value that does not parse."""


# A number option without its own max_value is still bounded: analyses hand options to numpy
# (int64 columns, float64 thresholds), where 10**23 would overflow into a 500.
DEFAULT_MAX_MAGNITUDE = 2**53


@dataclass(frozen=True)
class Option:
    """One tool option. ``choices``/``min_value``/``max_value``/``group``/``advanced`` only tell a
    page which control to draw (a select, a bounded number, a collapsed "More options"); the
    parser is what enforces them."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str = ""
    choices: tuple[str, ...] = ()
    min_value: float | None = None
    max_value: float | None = None
    group: str = ""
    advanced: bool = False

    def allowed(self) -> str:
        """The allowed values in words, for a 400's message."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.default is None or isinstance(self.default, (bool, str)):
            return ""
        if isinstance(self.default, (int, float)):
            lo = -DEFAULT_MAX_MAGNITUDE if self.min_value is None else self.min_value
            hi = DEFAULT_MAX_MAGNITUDE if self.max_value is None else self.max_value
            return f"a number from {_num(lo)} to {_num(hi)}"
        return ""

    def check(self, text: str, value: Any) -> Any:
        """``value`` (parsed from ``text``) within the option's range, or OptionError naming it."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        lo = -DEFAULT_MAX_MAGNITUDE if self.min_value is None else self.min_value
        hi = DEFAULT_MAX_MAGNITUDE if self.max_value is None else self.max_value
        if not math.isfinite(value) or not lo <= value <= hi:
            raise OptionError(f"option {self.name}={_clip(text)} is out of range: allowed is {self.allowed()}")
        return value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "default": self.default, "help": self.help}
        if self.choices:
            out["choices"] = list(self.choices)
        if self.min_value is not None:
            out["min"] = self.min_value
        if self.max_value is not None:
            out["max"] = self.max_value
        if self.group:
            out["group"] = self.group
        if self.advanced:
            out["advanced"] = True
        return out


@dataclass(frozen=True, kw_only=True)
class Tool(Generic[R]):
    """One tool, whole: what it computes, its result type, what it needs of a run and its help.

    The tool list (``service/tools.py`` ``TOOL_MODULES``) names the modules that define these;
    everything else reads them: the ``tools`` and ``settings`` routes, the TypeScript of the
    result types (``scripts/gen_ts_schemas.py``), the pages' "no data" help, and which runs offer
    the tool (``needs`` within the run kind's traits, ``readers/kinds.py``).
    """

    name: str
    title: str
    compute: Callable[[Sequence[Any], Mapping[str, Any]], R]
    # The TypedDict ``compute`` returns (analyses/results/): what the routes send and the pages
    # read typed. None: a tool that only ever answers "no data" (XProf's TPU counter tools).
    result: type | None
    # What it needs from a run (store/traits.py): it is offered for runs of the kinds whose
    # traits include all of these.
    needs: frozenset[Trait]
    # The same compute, typed on what it reads of a host (store/view.py), for a tool that can run
    # on a pod's per-host partials (analyses/partials.py): the service then hands it the partials
    # when it has them. None: the tool needs the full stores, and always gets them.
    compute_partials: Callable[[Sequence[StoreView], Mapping[str, Any]], R] | None = None
    # Whether a store has data for this tool (listed in `runs`); cheap, no full analysis.
    available: Callable[[Any], bool] = lambda store: True
    options: tuple[Option, ...] = ()
    multi_host: bool = False  # accepts several hosts at once ("all hosts")
    # Accepts several hosts only for runs with these traits too (the trace viewer: ranks that
    # share Kineto's clock in one timeline; an XSpace pod stays one host at a time). Empty: never.
    multi_host_needs: frozenset[Trait] = frozenset()
    aliases: tuple[str, ...] = ()
    description: str = ""  # what it shows, in a sentence
    requires: str = ""  # what a profile must contain for it to have data ("needs ..." on a no-data page)
    how_to: tuple[str, ...] = ()  # how to record a profile that has it
    # Reads the event stats of a few planes only (the device planes, or the host's allocator
    # events): a file this tool opens first is converted lazily, each plane's stats decoded when
    # a tool first reads them (readers/xplane.py ``read_xspace(lazy=True)``).
    few_planes: bool = False

    def offered_for(self, traits: frozenset[str]) -> bool:
        """Whether a run whose kind has ``traits`` can have data for this tool."""
        return self.needs <= traits

    def multi_host_for(self, traits: frozenset[str]) -> bool:
        """Whether the tool takes several hosts at once for a run whose kind has ``traits``."""
        return self.multi_host or (bool(self.multi_host_needs) and self.multi_host_needs <= traits)

    def parse_options(self, raw: Mapping[str, str]) -> dict[str, Any]:
        parsed: dict[str, Any] = {}
        for opt in self.options:
            if opt.name in raw and raw[opt.name] != "":
                text = raw[opt.name]
                try:
                    value = opt.parse(text)
                except (ValueError, TypeError, OverflowError) as e:
                    allowed = opt.allowed()
                    raise OptionError(f"option {opt.name}={_clip(text)} is invalid: {e}"
                                      + (f" (allowed is {allowed})" if allowed else "")) from e
                parsed[opt.name] = opt.check(text, value)
            else:
                parsed[opt.name] = opt.default
        return parsed


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _clip(text: str) -> str:
    """A parameter as the error quotes it: long values cut (they come back in every 400)."""
    return repr(text if len(text) <= 60 else text[:60] + "...")


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
