"""Prompt block hashes reused instead of recomputed, between workload runs and within one.

Hashing every prompt's full blocks is about a third of a lab run. A block hash
depends only on the tokens before it and in it, the block size and the extra keys
(LoRA, and the cache salt in the first block), so:

- a prompt seen in a recent run has the same hashes again, and most knob changes
  (output length, arrival, pool size, batch budget, a reset) leave every prompt as
  it was;
- within a run, a prompt's full blocks that repeat the previous prompt with the same
  extra keys (the shared system prompt) have that prompt's hashes: only the blocks
  after the shared part are hashed.

The result is the same run; only the time differs (tests/engine/test_prompt_hashes.py
checks both).
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

    def hasher(
        self, prompt_key: Hashable, block_size: int, block_hasher: BlockHasher
    ) -> BlockHasher:
        """``block_hasher`` for requests whose prompts ``prompt_key`` decides: a new
        request's prompt hashes come from the store when a run had them already, and
        the blocks it shares with the previous prompt of its extra keys from that one."""
        known = self._by_key.setdefault(prompt_key, {})
        self._by_key.move_to_end(prompt_key)
        # Extra keys -> the last prompt hashed with them in this run, and its hashes.
        last_prompt: dict[Hashable, tuple[list[int], list[BlockHash]]] = {}
        last_shared = [0]  # full blocks shared by the last two prompts compared

        def reusing_block_hasher(request: Request) -> list[BlockHash]:
            # A request under construction (no hashes, no output yet) asks for its
            # prompt's blocks; every later call is for blocks of generated tokens.
            if request.block_hashes or request.num_output_tokens:
                return block_hasher(request)
            hashes = known.get(request.request_id)
            if hashes is None:
                hashes = tuple(hashed_after_shared_blocks(request))
                if self._make_room(prompt_key, len(hashes)):
                    known[request.request_id] = hashes
            return list(hashes)

        def hashed_after_shared_blocks(request: Request) -> list[BlockHash]:
            extra_keys = (request.lora_name, request.lora_path, request.cache_salt)
            prompt = request.prompt_token_ids
            shared: list[BlockHash] = []
            if extra_keys in last_prompt:
                previous, previous_hashes = last_prompt[extra_keys]
                blocks = shared_full_blocks(prompt, previous, block_size, last_shared[0])
                last_shared[0] = blocks
                shared = previous_hashes[:blocks]
            # vLLM's hasher goes on from the hashes the request has: lend it the shared
            # ones, so it hashes only the blocks after them.
            request.block_hashes.extend(shared)
            try:
                hashes = shared + block_hasher(request)
            finally:
                request.block_hashes.clear()
            last_prompt[extra_keys] = (prompt, hashes)
            return hashes

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


def shared_full_blocks(prompt: list[int], other: list[int], block_size: int, guess: int) -> int:
    """How many full blocks at the start of ``prompt`` hold the same tokens as ``other``.

    ``guess`` (the answer for the prompt before, in a workload where they share a system
    prompt) is checked first with one comparison; the rest is a binary search that
    compares only the tokens after the blocks known to be shared. (Slice comparisons
    run in C, but a search comparing from the first token each time took two thirds
    of the prompts' hashing time in a profile.)"""
    low, high = 0, min(len(prompt), len(other)) // block_size
    guess = min(guess, high)
    if guess:
        end = guess * block_size
        if prompt[:end] == other[:end]:
            low = guess
        else:
            high = guess - 1
    while low < high:
        middle = (low + high + 1) // 2
        start, end = low * block_size, middle * block_size
        if prompt[start:end] == other[start:end]:
            low = middle
        else:
            high = middle - 1
    return low


# Runs are pure functions of their knobs, so one store serves every run in the process.
PROMPT_HASHES = PromptHashStore()
