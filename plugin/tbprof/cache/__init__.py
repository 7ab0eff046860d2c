"""Converted profiles kept: the memory LRU and the disk cache (bounded, LRU, entries written
in place by streaming readers), bucket-side caches, the conversion memory guard."""
