"""The one error type readers raise: it names the file and says what is wrong with it."""

from __future__ import annotations


class ProfileReadError(Exception):
    """A profile file that cannot be read. HTTP turns it into a 422, the CLI into exit 2."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
