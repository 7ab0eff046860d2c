"""Analyses: pure functions ``stores -> dict``, grouped by subject.

``steps/`` (step assignment and breakdown), ``ops/`` (op metrics, op tables, kernels),
``memory/``, ``pages/`` (overview, input pipeline, pod viewer, tf.data, profile summary),
``legacy/`` (TF1 timelines, tfprof, PyTorch), ``compare/``; ``tool.py`` says what a tool is,
``table.py`` and ``encode.py`` hold tables and their JSON/CSV. ``service/tools.py`` lists the tools.
"""
