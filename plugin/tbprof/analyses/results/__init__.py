"""The result type of every tool, by subject: what ``compute`` returns, as TypedDicts.

mypy checks each producer against its type (``Tool[R]``), ``analyses/schemas.py`` lists them
(``TOOL_RESULTS``), ``scripts/gen_ts_schemas.py`` writes them as TypeScript for the pages, and
``tests/analyses/test_result_types.py`` checks every tool's real answer on every sample profile.
These modules import only ``analyses/table.py``, so the registry costs no analysis import.
"""
