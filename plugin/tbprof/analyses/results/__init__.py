"""The result type of every tool, by subject: what ``compute`` returns, as TypedDicts.

mypy checks each producer against its type (``Tool[R]``), each tool names its own
(``Tool.result``), ``scripts/gen_ts_schemas.py`` writes them as TypeScript for the pages, and
``tests/analyses/test_result_types.py`` checks every tool's real answer on every sample profile.
These modules import only ``analyses/table.py``: a type costs no analysis import.
"""
