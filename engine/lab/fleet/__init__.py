"""A fleet of replicas behind a router: N copies of one engine's model (vLLM's or
SGLang's), the same capacity each, and a router that picks a replica per request from
what it can know (its own count, the replicas' loads, their KV events, the prompts it
routed). docs/fleet.md says what each router is and where it comes from.

- ``kv_index``: the block-hash index a prefix-aware router keeps per replica, fed only
  by the replicas' ``BlockStored`` / ``BlockRemoved`` / ``AllBlocksCleared`` events;
- ``approx_tree``: SGLang's router's approximate tree per worker, from routed prompts;
- ``routers``: round-robin, least-loaded, prefix-aware, cache-aware;
- ``requests``: what a router is given about a request;
- ``in_order``: a trace through the fleet in order (each replica the trace replay's
  ``VLLMReplay`` or SGLang's ``SGLangReplay``);
- ``timed``: a trace slice or a workload with time (each replica the workload lab's runner);
- ``result``: a fleet run's figures; ``sweep``: many runs in a process pool; ``cli``:
  ``python -m engine --fleet``.

Standard library only.
"""
