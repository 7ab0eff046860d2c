"""What one answer may hold: names cut to a bound, and a size refused before it is built.

A profile's names are its own text, of any length: a file of a few MB can give a thousand
events one name of megabytes, and an answer that lists events (a kernel sequence, a page of
search matches) would repeat it a thousand times. Per-event answers show each name cut to
``MAX_ANSWER_NAME_CHARS`` (its head and tail around an ellipsis, as JSON values in ``args`` are
cut by the reader), and a tool that builds text per event first adds up what it would write and
refuses (``AnswerTooLarge``) past ``answer_limit_bytes()``, before allocating it.

Every answer is counted against that limit where it is encoded, whatever built it: the JSON and
CSV encoders (``analyses/encode.py``) add up an ``AnswerBudget`` as they walk a result, a table
page is estimated from its rows' values before its rows are made (``analyses/table.py``), a
trace-viewer window from its events and names before its frame is written
(``timeline/encoding.py``), and the encoded body is measured once more before it is sent.
"""

from __future__ import annotations

from tbprof.errors import AnswerTooLarge
from tbprof.store.memo import budget_bytes_from_env

# Above the longest C++ kernel and XLA op names real profiles carry (templated CUTLASS names run to a
# few KiB), so a real name is shown whole.
MAX_ANSWER_NAME_CHARS = 4096
_HEAD_CHARS = 3072
ELLIPSIS = "…"
# The most one answer may take, and at most a quarter of the memory budget (the answer is kept
# in the budget as a result and as its JSON body).
MAX_ANSWER_BYTES = 64 << 20


def capped_name(name: str) -> str:
    """``name``, or past ``MAX_ANSWER_NAME_CHARS`` its head and tail around an ellipsis."""
    if len(name) <= MAX_ANSWER_NAME_CHARS:
        return name
    tail = MAX_ANSWER_NAME_CHARS - _HEAD_CHARS - len(ELLIPSIS)
    return name[:_HEAD_CHARS] + ELLIPSIS + name[-tail:]


def capped_len(name: str) -> int:
    """``len(capped_name(name))`` without building it."""
    return min(len(name), MAX_ANSWER_NAME_CHARS)


def answer_limit_bytes() -> int:
    return min(MAX_ANSWER_BYTES, budget_bytes_from_env() // 4)


def check_answer_bytes(need_bytes: int, what: str, narrow: str) -> None:
    """Refuses an answer that would take ``need_bytes`` (an estimate made before building it)
    past ``answer_limit_bytes()``; ``narrow`` says how to ask for less."""
    limit = answer_limit_bytes()
    if need_bytes > limit:
        raise AnswerTooLarge(f"the answer would hold {what}, about {_shown_bytes(need_bytes)}, more than an answer "
                             f"may take ({_shown_bytes(limit)}): {narrow}")


def _shown_bytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.0f} MB" if n_bytes >= 10**7 else f"{n_bytes / 1e6:.1f} MB" if n_bytes >= 10**5 \
        else f"{n_bytes / 1e3:.0f} KB"


class AnswerBudget:
    """What one answer has taken so far, refused once past ``answer_limit_bytes()``.

    ``narrow`` says how to ask for less (a page, a filter, a narrower window); each ``add``
    names what it counted, so the refusal says which part was too large."""

    __slots__ = ("limit", "narrow", "used")

    def __init__(self, narrow: str) -> None:
        self.limit = answer_limit_bytes()
        self.narrow = narrow
        self.used = 0

    def add(self, need_bytes: int, what: str) -> None:
        self.used += need_bytes
        if self.used > self.limit:
            check_answer_bytes(self.used, what, self.narrow)


# How to ask for less of a tool's answer or a table page, of a CSV export, of a SQL answer.
NARROW_TABLES = ("ask for a page of its tables (rows=N on data; limit= and offset= on table), "
                 "a filter (filter_COLUMN=), or fewer hosts")
NARROW_CSV = "export a filtered table (filter_COLUMN=) or a page of it (limit=, offset=)"
NARROW_SQL = "select fewer rows (a LIMIT, or a smaller max_rows) or fewer or shorter columns"
