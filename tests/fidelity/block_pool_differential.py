"""Differential check: random call sequences on vLLM 0.33.0's real BlockPool and ours.

Runs under a Python that can import vLLM (see vllm_differential.py), e.g.

    /tmp/vllm-venv/bin/python tests/fidelity/block_pool_differential.py --cases 2000

Each case builds both pools with the same constructor call (vLLM's positional
order; caching and KV events on or off) and drives them with one random sequence
of the calls a KV-cache manager makes: look up a prompt's cached prefix and touch
it, take new blocks (asking for more than are free, too), cache the full blocks
(also twice under one hash, as a request that skips the cache does), grow a
request by decoded tokens and cache its newly full block, free a request's blocks
tail first, evict blocks by id, reset the prefix cache while blocks are held or
not, and take the events. After every call it compares what the call returned or
raised, the free queue order, every block's ref count and hash, the hash map in
its own order, the free count, the usage and the events. The first difference is
printed with the case's seed; the exit status is 1 if any case differed.
"""

from __future__ import annotations

import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from drivers import run_seeded_cases
from vllm_differential import event_dict, lora_int_id, lora_path, pool_snapshot

CALLS_PER_CASE = 120
LORA_NAMES = ("sql", "chat")


class Side:
    """One implementation: its pool, its Request and its block hasher."""

    def __init__(self, real: bool, num_gpu_blocks: int, caching: bool, events: bool, bs: int):
        self.real = real
        self.block_size = bs
        if real:
            from vllm.utils.hashing import get_hash_fn_by_name
            from vllm.v1.core.block_pool import BlockPool
            from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

            hash_fn = get_hash_fn_by_name("sha256")
            init_none_hash(hash_fn)
        else:
            from engine.vllm.block_pool import BlockPool  # type: ignore[assignment]
            from engine.vllm.kv_cache_utils import (  # type: ignore[assignment]
                get_request_block_hasher,
                init_none_hash,
                sha256,
            )

            hash_fn = sha256  # type: ignore[assignment]
            init_none_hash(hash_fn)
        self.hasher = get_request_block_hasher(bs, hash_fn)
        self.pool = BlockPool(num_gpu_blocks, caching, bs, events)
        self.requests: dict[str, Any] = {}
        self.blocks: dict[str, list[Any]] = {}
        self.num_cached: dict[str, int] = {}

    def make_request(self, request_id: str, prompt: list[int], salt: str | None, lora: str | None):
        if self.real:
            from vllm.lora.request import LoRARequest
            from vllm.sampling_params import SamplingParams
            from vllm.v1.request import Request

            lora_request = LoRARequest(lora, lora_int_id(lora), lora_path(lora)) if lora else None
            return Request(
                request_id=request_id,
                prompt_token_ids=list(prompt),
                sampling_params=SamplingParams(max_tokens=64, ignore_eos=True),
                pooling_params=None,
                cache_salt=salt,
                block_hasher=self.hasher,
                arrival_time=0.0,
                lora_request=lora_request,
            )
        from engine.vllm.request import Request  # type: ignore[assignment]

        return Request(  # type: ignore[call-arg]
            request_id,
            prompt,
            max_tokens=64,
            block_hasher=self.hasher,
            cache_salt=salt,
            lora_name=lora,
            lora_int_id=lora_int_id(lora),
            lora_path=lora_path(lora),
        )

    def call(self, action: tuple[Any, ...]) -> Any:
        """Do one action; its result, or the exception it raised, as comparable data."""
        try:
            return ("ok", self._do(action))
        except Exception as error:  # a raise is an outcome to compare
            return ("raised", type(error).__name__, str(error))

    def _do(self, action: tuple[Any, ...]) -> Any:
        pool, bs = self.pool, self.block_size
        kind = action[0]
        if kind == "admit":
            _, request_id, prompt, salt, lora, read_cache = action
            request = self.make_request(request_id, prompt, salt, lora)
            hits: list[Any] = []
            if read_cache and pool.enable_caching:
                # The longest cached prefix, never the whole prompt (its last token is
                # recomputed for the logits), as find_longest_cache_hit walks it.
                for block_hash in request.block_hashes[: (len(prompt) - 1) // bs]:
                    found = pool.get_cached_block(block_hash, [0])
                    if found is None:
                        break
                    hits.append(found[0])
            num_needed = -(-len(prompt) // bs) - len(hits)
            if num_needed > pool.get_num_free_blocks() - sum(h.ref_cnt == 0 for h in hits):
                return ("no room", [b.block_id for b in hits])
            pool.touch(hits)
            new = pool.get_new_blocks(num_needed)
            blocks = hits + new
            num_full = len(prompt) // bs
            if pool.enable_caching:
                pool.cache_full_blocks(request, blocks, len(hits), num_full, bs, 0)
            self.requests[request_id], self.blocks[request_id] = request, blocks
            self.num_cached[request_id] = max(num_full, len(hits))
            return ([b.block_id for b in hits], [b.block_id for b in new])
        if kind == "grow":
            _, request_id, tokens = action
            request, blocks = self.requests[request_id], self.blocks[request_id]
            request.append_output_token_ids(tokens)
            needed = -(-request.num_tokens // bs) - len(blocks)
            if needed > pool.get_num_free_blocks():
                return "no room"
            new = pool.get_new_blocks(needed) if needed > 0 else []
            blocks.extend(new)
            num_full = request.num_tokens // bs
            if pool.enable_caching:
                pool.cache_full_blocks(
                    request, blocks, self.num_cached[request_id], num_full, bs, 0
                )
                self.num_cached[request_id] = num_full
            return [b.block_id for b in new]
        if kind == "free":
            _, request_id = action
            pool.free_blocks(reversed(self.blocks.pop(request_id)))
            del self.requests[request_id], self.num_cached[request_id]
            return None
        if kind == "free_all":
            for request_id in list(self.blocks):
                self._do(("free", request_id))
            return None
        if kind == "overdraw":  # vLLM raises before it changes anything
            return pool.get_new_blocks(pool.get_num_free_blocks() + 1)
        if kind == "evict":
            pool.evict_blocks(set(action[1]))
            return None
        if kind == "reset":
            return pool.reset_prefix_cache()
        if kind == "take_events":
            return [event_dict(e) for e in pool.take_events()]
        raise AssertionError(kind)

    def state(self) -> dict[str, Any]:
        return {
            **pool_snapshot(self.pool),
            "num_free": self.pool.get_num_free_blocks(),
            "usage": self.pool.get_usage(),
            "held": {r: [b.block_id for b in bs] for r, bs in self.blocks.items()},
        }


def draw_action(rng: random.Random, side: Side, documents: list[list[int]], count: int):
    live = list(side.requests)
    roll = rng.random()
    if not live and roll < 0.3:  # all free: a reset can succeed
        return ("reset",)
    if roll < 0.4 or not live:
        bs = side.block_size
        prompt = list(rng.choice(documents))[: rng.randint(1, 5 * bs)] if rng.random() < 0.8 else []
        prompt += [rng.randrange(1, 50) for _ in range(rng.randint(0 if prompt else 1, 2 * bs))]
        salt = rng.choice(["a", "b"]) if rng.random() < 0.15 else None
        lora = rng.choice(LORA_NAMES) if rng.random() < 0.15 else None
        return ("admit", f"r{count}", prompt, salt, lora, rng.random() < 0.9)
    if roll < 0.6:
        return ("grow", rng.choice(live), [rng.randrange(1, 50) for _ in range(rng.randint(1, 6))])
    if roll < 0.85:
        return ("free", rng.choice(live))
    if roll < 0.9:
        ids = range(side.pool.num_gpu_blocks)
        return ("evict", sorted(rng.sample(ids, rng.randint(1, min(3, len(ids))))))
    if roll < 0.93:
        return ("reset",)
    if roll < 0.95:
        return rng.choice([("free_all",), ("overdraw",)])
    return ("take_events",)


COVERAGE: Counter[str] = Counter()


def tally(action: tuple[Any, ...], result: Any, state: dict[str, Any]) -> None:
    """What the calls exercised, so a clean run is known not to be a trivial one."""
    COVERAGE["calls"] += 1
    if action[0] == "admit" and result[0] == "ok" and result[1][0] != "no room":
        COVERAGE["hit blocks"] += len(result[1][0])
    if action[0] == "overdraw" and result[0] == "raised":
        COVERAGE["overdraws refused"] += 1
    if action[0] == "reset":
        COVERAGE["resets done" if result[1] else "resets refused"] += 1
    if action[0] == "take_events":
        for event in result[1]:
            COVERAGE[event["type"]] += 1
    COVERAGE["keys under two blocks"] += sum(len(ids) > 1 for _, ids in state["hash_map"])


def run_case(seed: int) -> str | None:
    rng = random.Random(seed)
    block_size = rng.randint(1, 8)
    num_gpu_blocks = rng.randint(2, 24)
    caching = rng.random() < 0.9
    events = rng.random() < 0.7
    documents = [[rng.randrange(1, 50) for _ in range(5 * block_size)] for _ in range(3)]
    real = Side(True, num_gpu_blocks, caching, events, block_size)
    ours = Side(False, num_gpu_blocks, caching, events, block_size)
    for count in range(CALLS_PER_CASE):
        action = draw_action(rng, ours, documents, count)
        outcome = (real.call(action), ours.call(action))
        header = f"seed={seed} (pool {num_gpu_blocks}, block size {block_size}, "
        header += f"caching {caching}, events {events}) call {count} {action}"
        if outcome[0] != outcome[1]:
            return f"{header}:\n  vllm: {outcome[0]}\n  ours: {outcome[1]}"
        if outcome[0][0] == "raised" and action[0] != "overdraw":
            # a failed call may leave either side half done: the case ends here
            COVERAGE["raised " + outcome[0][1]] += 1
            return None
        states = (real.state(), ours.state())
        tally(action, outcome[0], states[0])
        for key in states[0]:
            if states[0][key] != states[1][key]:
                return f"{header}: {key}\n  vllm: {states[0][key]}\n  ours: {states[1][key]}"
    return None


def main() -> int:
    return run_seeded_cases(__doc__.splitlines()[0], run_case, COVERAGE)


if __name__ == "__main__":
    sys.exit(main())
