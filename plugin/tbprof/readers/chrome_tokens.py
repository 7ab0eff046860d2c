"""The scanner's token table as the Chrome reader uses it: each distinct token (a name, a pid, an
args key or value) converted once, per-token lookup tables, JSON decoded with a refusal for
integers longer than Python converts."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

GLOBAL_PID = "Global instant events"
MISSING = -1  # token id of an absent field
GLOBAL = -3  # token id standing for the global-instant track's pid / tid


class LongNumber(ValueError):
    """A JSON integer with more digits than Python converts (``sys.get_int_max_str_digits``)."""

    def __init__(self, digits: int) -> None:
        super().__init__(f"an integer of {digits} digits")
        self.digits = digits
        self.token = MISSING  # the token holding it, when it came from the token table
        self.field = "a value"

    def reason(self) -> str:
        return f"{self.field} holds an integer of {self.digits} digits, more than tbprof reads"


def parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # valid digits: only too many of them
        raise LongNumber(len(text.lstrip("-"))) from None


def loads(text: str | bytes) -> Any:
    """``json.loads`` whose over-long integers raise ``LongNumber`` (a refusal naming the field)."""
    return json.loads(text, parse_int=parse_int)


# Token columns of the scanner, with the field each holds (to name where a bad value is).
_TOKEN_FIELDS = (("name", "an event's 'name'"), ("pid", "an event's 'pid'"), ("tid", "an event's 'tid'"),
                 ("id", "an event's 'id'"), ("cat", "an event's 'cat'"), ("ph", "an event's 'ph'"),
                 ("st_key", "an event's args"), ("st_value", "an event's args"))


def field_of(cols: dict[str, np.ndarray], token: int) -> str:
    """The field of the token columns still held that holds ``token``."""
    for column, field in _TOKEN_FIELDS:
        values = cols.get(column)
        if values is not None and token >= 0 and bool((values == token).any()):
            return field
    return "a value"




def hashable(value: Any) -> Hashable:
    if value is None or isinstance(value, (int, str, float)):
        return value
    return json.dumps(value, sort_keys=True, default=str)



class Tokens:
    """The scanner's token table, each token converted once per use (a name, an identity, ...)."""

    def __init__(self, raw: Sequence[bytes]) -> None:
        self.raw = raw
        self._values: dict[int, Any] = {}

    def value(self, t: int) -> Any:
        """The field's value as the reader uses it: a string as itself, lists and objects as their
        JSON text (at most 4 KiB), a non-finite number as its text, absent as None."""
        if t == MISSING:
            return None
        if t == GLOBAL:
            return GLOBAL_PID
        found = self._values.get(t, self)
        if found is not self:
            return found
        raw = self.raw[t]
        text = raw[1:]
        if raw[:1] == b"S":
            v: Any = text.decode("utf-8")
        elif len(text) < 1000 and (text.isdigit() or (text[:1] == b"-" and text[1:].isdigit())):
            v = int(text)  # the common id: an integer, without json.loads' cost
        else:
            try:
                v = loads(text)
            except LongNumber as e:
                e.token = t
                raise
            if isinstance(v, float) and not math.isfinite(v):
                v = str(v)
            elif v is not None and not isinstance(v, (str, int, float)):
                v = json.dumps(v, sort_keys=True, default=str)[:4096]
        self._values[t] = v
        return v

    def key(self, t: int) -> Hashable:
        return hashable(self.value(t))

    def text(self, t: int) -> str:
        """A name as text (absent: "")."""
        v = self.value(t)
        return "" if t == MISSING else v if isinstance(v, str) else str(v)

    def canonical(self, t: int) -> str:
        """A string token's text, or a JSON token as ``json.dumps(v, sort_keys=True)``."""
        raw = self.raw[t]
        if raw[:1] == b"S":
            return raw[1:].decode("utf-8")
        try:
            return json.dumps(loads(raw[1:]), sort_keys=True, default=str)
        except LongNumber as e:
            e.field = "an event's args"  # canonical text is asked for args values only
            raise


def lut_table(parts: Iterable[np.ndarray], fn: Any, dtype: Any, n_tokens: int) -> np.ndarray:
    """``fn(t)`` at ``t + 3`` for every token id ``t`` (ids >= -3) found in ``parts``, computed once per
    distinct id in id order (first seen in the file first, so string ids are reproducible)."""
    mask = np.zeros(n_tokens + 3, dtype=np.bool_)
    for toks in parts:
        mask[toks + 3] = True
    used = np.flatnonzero(mask)
    table = np.zeros(n_tokens + 3, dtype=dtype)
    table[used] = [fn(int(t) - 3) for t in used.tolist()]
    return table


def lut(toks: np.ndarray, fn: Any, dtype: Any, n_tokens: int) -> np.ndarray:
    """``fn(t)`` for every token id in ``toks`` (see ``lut_table``)."""
    if toks.shape[0] == 0:
        return np.zeros(0, dtype=dtype)
    return lut_table([toks], fn, dtype, n_tokens)[toks + 3]


class TokenTable:
    """``fn(t)`` per token id (``fn`` gives ids >= 0: string ids), computed once per distinct id
    across calls: ``intern`` computes, in ascending order, the ids of the tokens it is the first
    to see (the order one lookup per batch of rows interns new strings in); ``lookup`` reads
    them, on any thread, for tokens interned already (an entry only ever goes from -1 to its id)."""

    def __init__(self, fn: Callable[[int], Any], dtype: Any, n_tokens: int) -> None:
        self.fn = fn
        self.table = np.full(n_tokens + 3, -1, dtype=dtype)

    def intern(self, distinct: np.ndarray) -> None:
        """Computes the ids of the tokens ``distinct`` (ascending, each once) not computed yet."""
        at = distinct.astype(np.int64) + 3
        new = at[self.table[at] < 0]
        if new.shape[0]:
            self.table[new] = [self.fn(int(t) - 3) for t in new.tolist()]

    def lookup(self, toks: np.ndarray) -> np.ndarray:
        """The ids of ``toks``, every one interned already."""
        return self.table[toks + 3]
