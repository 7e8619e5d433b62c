"""The model of vLLM's v1 prefix cache: vLLM's own code, sharpened, and traced as a whole.

Layers, bottom up: ``kv_cache_utils`` (blocks, free queue, hashing) ->
``block_pool`` -> ``kv_cache_manager`` -> ``scheduler`` -> ``core``. Beside the
scheduler: ``kv_offload`` (CPU offload stores) and ``aux_output`` (auxiliary
output generation), keep mode's two crash sites; in front of the engine core:
``api_server`` (the HTTP reset endpoint and the client across the process boundary).
Every module here is traced: the code panel may show any of its lines.
"""
