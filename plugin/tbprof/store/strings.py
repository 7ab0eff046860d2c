"""The string table: every name in a profile once, referred to by an int32 id."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np


class StringTable:
    """Append-only interning table. Id 0 is always the empty string."""

    def __init__(self, strings: Iterable[str] = ("",)) -> None:
        self._strings: list[str] = list(strings)
        if not self._strings or self._strings[0] != "":
            self._strings.insert(0, "")
        self._ids: dict[str, int] = {s: i for i, s in enumerate(self._strings)}

    def intern(self, s: str) -> int:
        found = self._ids.get(s)
        if found is not None:
            return found
        new_id = len(self._strings)
        self._strings.append(s)
        self._ids[s] = new_id
        return new_id

    def intern_all(self, texts: Iterable[str]) -> list[int]:
        """``[self.intern(s) for s in texts]``, in one pass without a method call per text (a
        reader interns every name of a plane)."""
        ids, strings = self._ids, self._strings
        if len(ids) != len(strings):  # a table built from repeated strings: ids are not len(ids)
            return [self.intern(s) for s in texts]
        before = len(ids)
        out = [ids.setdefault(s, len(ids)) for s in texts]
        if len(ids) > before:  # the new strings, in the order they were added (the dict's)
            added = list(itertools.islice(reversed(ids), len(ids) - before))
            added.reverse()
            strings.extend(added)
        return out

    def id(self, s: str) -> int:
        """The id of ``s``, or -1 when the profile never mentions it."""
        return self._ids.get(s, -1)

    def __getitem__(self, string_id: int) -> str:
        return self._strings[string_id]

    def __len__(self) -> int:
        return len(self._strings)

    def lookup(self, ids: np.ndarray) -> list[str]:
        strings = self._strings
        return [strings[i] if i >= 0 else "" for i in ids.tolist()]

    def ids_matching(self, predicate: Callable[[str], bool]) -> np.ndarray:
        """Ids of all strings for which predicate holds (vectorises name filters)."""
        return np.fromiter((i for i, s in enumerate(self._strings) if predicate(s)), dtype=np.int32)

    def as_list(self) -> list[str]:
        return self._strings

    @property
    def nbytes(self) -> int:
        return sum(len(s) for s in self._strings) + 64 * len(self._strings)
