"""Whole-run summaries: overview page, profile summary, smart suggestions."""
