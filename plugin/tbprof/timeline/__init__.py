"""The trace viewer's backend: tracks, window queries with level of detail, search, details."""
