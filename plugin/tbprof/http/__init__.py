"""The WSGI app: routes, argument parsing, JSON/CSV/binary responses."""
