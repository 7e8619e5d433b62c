"""A faithful, traced model of vLLM's v1 prefix cache.

Layers, bottom up: ``kv_cache_utils`` (blocks, free queue, hashing) ->
``block_pool`` -> ``kv_cache_manager`` -> ``scheduler`` -> ``core``; then
``scenario`` (what to play) -> ``timeline`` (the recorded steps). Beside the
scheduler: ``kv_offload`` (CPU offload stores) and ``aux_output`` (auxiliary
output generation), keep mode's two crash sites; in front of the engine core:
``api_server`` (the HTTP reset endpoint and the client across the process boundary).
Standard library only: it runs unchanged in CPython and in Pyodide.
"""
