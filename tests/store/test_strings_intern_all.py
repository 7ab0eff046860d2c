"""``StringTable.intern_all`` interns as ``intern`` does, text by text: the same ids, the same
table, whether the texts are new, repeated within the call, or already there."""

from __future__ import annotations

import pytest

from tbprof.store.strings import StringTable


@pytest.mark.parametrize("start", [("",), ("", "a", "b"), ("a", "b"), ("", "a", "", "a")])
def test_intern_all_is_intern_text_by_text(start: tuple[str, ...]) -> None:
    texts = ["b", "c", "", "c", "d", "a", "é", "b", "e"]
    one, many = StringTable(start), StringTable(start)
    expected = [one.intern(t) for t in texts]
    assert many.intern_all(texts) == expected
    assert many.as_list() == one.as_list()
    assert [many.id(t) for t in texts] == [one.id(t) for t in texts]
    assert many.intern_all([]) == []
    assert many.intern("new") == one.intern("new")
