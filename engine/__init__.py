"""A faithful, traced model of vLLM's v1 prefix cache.

Layers, bottom up: ``kv_cache_utils`` (blocks, free queue, hashing) ->
``block_pool`` -> ``kv_cache_manager`` -> ``scheduler`` -> ``core``; then
``scenario`` (what to play) -> ``timeline`` (the recorded steps).
Standard library only: it runs unchanged in CPython and in Pyodide.
"""
