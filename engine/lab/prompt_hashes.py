"""Prompt block hashes kept between workload runs.

Hashing every prompt's full blocks is about a third of a lab run, and most knob
changes (output length, arrival, pool size, batch budget, a reset) leave every
prompt as it was. A block hash depends only on the tokens before it and in it, the
block size and the extra keys (the cache salt), so a prompt seen in a recent run has
the same hashes again: they are reused instead of recomputed. The result is the same
run; only the time differs (tests/engine/test_prompt_hashes.py checks both).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from engine.vllm.kv_cache_utils import BlockHash
from engine.vllm.request import Request

BlockHasher = Callable[[Request], list[BlockHash]]

# About 70 bytes a hash: the largest run allowed (5 million tokens in blocks of 16)
# fits, and a few of the usual 200-request runs stay beside it.
MAX_KEPT_HASHES = 400_000


class PromptHashStore:
    """Prompt block hashes by prompt key (what decides a run's prompts) and request id,
    for the few prompt keys used last."""

    def __init__(self, max_hashes: int = MAX_KEPT_HASHES) -> None:
        self.max_hashes = max_hashes
        self._by_key: OrderedDict[Hashable, dict[str, tuple[BlockHash, ...]]] = OrderedDict()
        self._counts: dict[Hashable, int] = {}

    def hasher(self, prompt_key: Hashable, block_hasher: BlockHasher) -> BlockHasher:
        """``block_hasher`` for requests whose prompts ``prompt_key`` decides: a new
        request's prompt hashes come from the store when a run had them already."""
        known = self._by_key.setdefault(prompt_key, {})
        self._by_key.move_to_end(prompt_key)

        def reusing_block_hasher(request: Request) -> list[BlockHash]:
            # A request under construction (no hashes, no output yet) asks for its
            # prompt's blocks; every later call is for blocks of generated tokens.
            if request.block_hashes or request.num_output_tokens:
                return block_hasher(request)
            hashes = known.get(request.request_id)
            if hashes is None:
                hashes = tuple(block_hasher(request))
                if self._make_room(prompt_key, len(hashes)):
                    known[request.request_id] = hashes
            return list(hashes)

        return reusing_block_hasher

    def _make_room(self, prompt_key: Hashable, count: int) -> bool:
        """Count ``count`` more hashes under ``prompt_key``, dropping the least recently
        used other keys past the cap; False (keep nothing) when the key alone is too big."""
        kept = self._counts.get(prompt_key, 0)
        if kept + count > self.max_hashes:
            return False
        while len(self) + count > self.max_hashes:
            oldest = next(iter(self._by_key))
            del self._by_key[oldest]
            self._counts.pop(oldest, None)
        self._counts[prompt_key] = kept + count
        return True

    def clear(self) -> None:
        """Forget every kept hash (benchmarks time runs with their prompts new)."""
        self._by_key.clear()
        self._counts.clear()

    def __len__(self) -> int:
        """How many hashes are kept."""
        return sum(self._counts.values())


# Runs are pure functions of their knobs, so one store serves every run in the process.
PROMPT_HASHES = PromptHashStore()
