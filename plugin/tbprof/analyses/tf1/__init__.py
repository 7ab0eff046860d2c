"""TF1 timeline runs: step times, op statistics and allocator memory over step files."""
