"""User regexes (table filters, trace search, op_profile show/hide, tfprof views, compare selectors).

They run on RE2 (``google-re2``): matching is linear in the text, so no pattern can pin a core
the way ``^(?:[A-Za-z:]|[A-Za-z:])*!`` does in Python's backtracking ``re`` (which also holds
the GIL, so one such request stalls every other). RE2 refuses what it cannot run in linear
time (backreferences, lookaround); that is a 400 naming the construct, not a fallback to ``re``.

Compiled patterns are memoised by ``re2.compile`` itself (an LRU of 128); ``MAX_PATTERN_CHARS``
and ``MAX_PROGRAM_BYTES`` bound what each of them may hold.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import re2

from tbprof.errors import BadParameter

MAX_PATTERN_CHARS = 1000
# RE2's memory budget per compiled pattern (program + lazily built DFA states); RE2's default is
# 8 MB. A pattern whose program alone exceeds it fails to compile ("pattern too large").
MAX_PROGRAM_BYTES = 4 << 20


class RegexError(BadParameter):
    """A user regex that is too long, malformed, or uses syntax RE2 does not support."""


def _options(ignore_case: bool) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise print every rejected pattern to stderr
    options.max_mem = MAX_PROGRAM_BYTES
    options.case_sensitive = not ignore_case
    return options


def compile_user_regex(pattern: str, *, ignore_case: bool = False, what: str = "regex") -> re2._Regexp:
    """Compiles ``pattern`` for linear-time matching; RegexError says why it cannot."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RegexError(f"{what} is longer than {MAX_PATTERN_CHARS} characters")
    if "\x00" in pattern:
        raise RegexError(f"{what} contains a NUL character")
    try:
        return re2.compile(pattern, _options(ignore_case))
    except re2.error as e:
        reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise RegexError(f"{what} {pattern!r} does not compile: {reason} (regexes run on RE2, which has no "
                         "backreferences or lookaround, so that every match takes linear time)") from None


def searcher(pattern: str, *, ignore_case: bool = False, what: str = "regex") -> Callable[[str], bool]:
    """``text -> bool``: does ``pattern`` occur anywhere in the text (like ``re.search``)."""
    rx = compile_user_regex(pattern, ignore_case=ignore_case, what=what)
    return lambda text: rx.search(text) is not None


@functools.cache
def fixed(pattern: str) -> re2._Regexp:
    """One of tbprof's own patterns that runs over text from profile files, on RE2: Python's
    ``re`` takes quadratic time on some of them (``(\\w+):(\\S+)`` over a long stat of letters:
    bench/measurements.md#analyses). Compiled on first use; RE2's ``\\w`` is ASCII."""
    return compile_user_regex(pattern, what="internal pattern")
