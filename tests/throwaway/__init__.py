"""A tool and a run kind that exist only in tests: what adding a tool (one module, one line in
``service/tools.py`` ``TOOL_MODULES``) and adding a run kind (one entry in ``readers/kinds.py``
``KINDS``) takes, checked end to end (tests/service/test_one_entry.py, tests/e2e/test_generic_page.py)."""
