"""tfprof profiles: the views (scope, graph, code, op), their export and advice."""
