"""A request trace replayed in order through vLLM's own ``KVCacheManager`` and
``BlockPool`` (see traces/replay.py for the method), and its hit-rate curve."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from engine.lab.traces.replay import (
    STOP_CHECK_EVERY,
    InOrderReplay,
    Stop,
    _no_cyclic_gc,
    capacities_for,
)
from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    PromptHashes,
    TraceEntry,
    prompt_token_ids,
)
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import cdiv
from engine.vllm.kv_cache_utils import BlockHash, KVCacheBlock
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler


@dataclass(frozen=True)
class HashedTrace:
    """A trace's requests with their prompts' block hashes at one block size.

    The hashes do not depend on the pool, so one HashedTrace serves every capacity."""

    entries: list[TraceEntry]
    block_size: int
    block_hashes: list[list[BlockHash]]

    @classmethod
    def of(cls, entries: Sequence[TraceEntry], block_size: int = TRACE_BLOCK_TOKENS) -> HashedTrace:
        hasher = PromptHashes(block_size)
        return cls(list(entries), block_size, hasher.all_block_hashes(entries))

    @property
    def prompt_tokens(self) -> int:
        return sum(entry.input_length for entry in self.entries)

    @property
    def prompt_blocks(self) -> int:
        """Blocks every prompt takes, partial last blocks included: a pool this big (in
        usable blocks) never evicts in an in-order replay."""
        return sum(cdiv(entry.input_length, self.block_size) for entry in self.entries)

    @property
    def whole_trace_capacity(self) -> int:
        """Capacity in tokens that holds every block of the trace."""
        return self.prompt_blocks * self.block_size


class ReplayRequest(Request):
    """A trace request for the in-order replay: vLLM's ``Request`` with its prompt's
    block hashes given (computed once by ``PromptHashes``, the same ones vLLM's hasher
    gives the derived tokens) and its token ids derived only when read.

    A trace of 12,000 prompts of 12,000 tokens is 145 million token ids: building them
    for every request at every capacity took longer than the whole replay. What the
    cache reads of a request (``num_tokens``, ``block_hashes``) is exact. The in-order
    replay generates no output, so the hashes never grow.
    """

    def __init__(self, request_id: str, entry: TraceEntry, block_hashes: list[BlockHash]) -> None:
        super().__init__(request_id, (), max_tokens=max(1, entry.output_length))
        self.entry = entry
        self.block_hashes = block_hashes
        # The attributes the base class reads as fields, sized without building them.
        self._num_prompt_tokens = entry.input_length

    @property
    def prompt_token_ids(self) -> list[int]:
        return prompt_token_ids(self.entry)

    @prompt_token_ids.setter
    def prompt_token_ids(self, value: list[int]) -> None:
        """Request.__init__ sets the empty prompt it was given: the entry's is derived."""

    @property
    def num_tokens(self) -> int:
        return self._num_prompt_tokens

    @property
    def num_prompt_tokens(self) -> int:
        return self._num_prompt_tokens

    @property
    def all_token_ids(self) -> list[int]:
        return prompt_token_ids(self.entry)

    def append_output_token_ids(self, token_ids: int | Sequence[int]) -> None:
        raise NotImplementedError("the in-order replay generates no output")


class EvictionCounter:
    """Counts the cached blocks the pool takes back from its free queue to reuse them:
    each loses its hash (an eviction; vLLM's ``BlockRemoved`` event with events on).

    ``get_new_blocks`` takes them in one ``popleft_n`` call, hashes still on, so one
    wrapper call a request does it. (The workload lab's PoolCounter also keeps the pool's
    usage counts, wrapping calls made per block: a tenth of the in-order replay.)
    """

    def __init__(self, pool: BlockPool) -> None:
        self.queue = queue = pool.free_block_queue
        self.evictions = 0
        popleft_n = queue.popleft_n

        def counting_popleft_n(n: int) -> list[KVCacheBlock]:
            blocks = popleft_n(n)
            self.evictions += n - [block._block_hash for block in blocks].count(None)
            return blocks

        queue.popleft_n = counting_popleft_n  # type: ignore[method-assign]

    def detach(self) -> None:
        vars(self.queue).pop("popleft_n", None)


def _unlink(pool: BlockPool) -> None:
    """Let a pool go by reference counting (its free queue links blocks both ways)."""
    queue = pool.free_block_queue
    for block in (queue.fake_free_list_head, *pool.blocks, queue.fake_free_list_tail):
        block.prev_free_block = block.next_free_block = None


def num_gpu_blocks_for(capacity_tokens: int, block_size: int) -> int:
    """The pool for a capacity: whole blocks of it, plus vLLM's null block."""
    return capacity_tokens // block_size + 1


def replay_in_order(
    trace: HashedTrace,
    capacity_tokens: int,
    per_request: bool = False,
    stop: Stop | None = None,
) -> InOrderReplay:
    """Replay the trace in order at this capacity (see the module's docstring).

    ``per_request`` keeps a RequestResult per request; ``stop`` is asked every few hundred
    requests and ends the replay early when it says True (``completed`` is then False)."""
    with _no_cyclic_gc():
        return _replay_in_order(trace, capacity_tokens, per_request, stop)


def _replay_in_order(
    trace: HashedTrace, capacity_tokens: int, per_request: bool, stop: Stop | None
) -> InOrderReplay:
    started = time.perf_counter()
    block_size = trace.block_size
    num_gpu_blocks = num_gpu_blocks_for(capacity_tokens, block_size)
    if num_gpu_blocks < 2:
        raise ValueError(
            f"a capacity of {capacity_tokens} tokens holds no {block_size}-token block"
        )
    result = InOrderReplay(capacity_tokens, block_size, num_gpu_blocks)
    scheduler = Scheduler(num_gpu_blocks, block_size, enable_kv_cache_events=False)
    manager = scheduler.kv_cache_manager
    pool = manager.block_pool
    stats = manager.prefix_cache_stats
    assert stats is not None
    counter = EvictionCounter(pool)
    usable = num_gpu_blocks - 1
    for index, (entry, hashes) in enumerate(zip(trace.entries, trace.block_hashes, strict=True)):
        if stop is not None and index % STOP_CHECK_EVERY == 0 and index and stop():
            result.completed = False
            break
        num_tokens = entry.input_length
        hit = uncapped = evictions = 0
        skipped = cdiv(num_tokens, block_size) > usable
        if not skipped:
            request = ReplayRequest(str(index), entry, hashes)
            computed_blocks, hit = manager.get_computed_blocks(request)
            uncapped = hit
            # The cap binds only when the prompt is whole blocks and all but the last hit.
            if (
                num_tokens % block_size == 0
                and hit == num_tokens - block_size
                and pool.get_cached_block(hashes[-1]) is not None
            ):
                uncapped = num_tokens
            allocated = manager.allocate_slots(request, num_tokens - hit, hit, computed_blocks)
            assert allocated is not None, "an in-order replay always has room for one request"
            manager.record_prefix_cache_stats(request, hit)
            manager.free(request)
            evictions, counter.evictions = counter.evictions, 0
        result.count(index, entry, hit, uncapped, evictions, skipped, per_request)
    counter.detach()
    _unlink(pool)
    assert (result.queries, result.hits) == (stats.queries, stats.hits), "vLLM's counters"
    result.seconds = time.perf_counter() - started
    return result


def default_capacities(trace: HashedTrace, points: int = 8) -> list[int]:
    """``points`` capacities in tokens, log-spaced from half the mean prompt (less than one
    prompt) to the whole trace's blocks (nothing is ever evicted), whole blocks each."""
    return capacities_for(trace.entries, trace.block_size, points)


def hit_rate_curve(
    trace: HashedTrace, capacities: Sequence[int], stop: Stop | None = None
) -> Iterator[InOrderReplay]:
    """One in-order replay per capacity, yielded as each ends (for progress); the hashes
    are the trace's, computed once. Ends early when ``stop`` says True (the replay it
    stopped is yielded with ``completed`` False)."""
    for capacity in capacities:
        if stop is not None and stop():
            return
        point = replay_in_order(trace, capacity, stop=stop)
        yield point
        if not point.completed:
            return


def replay_unlimited(trace: HashedTrace, stop: Stop | None = None) -> InOrderReplay:
    """The in-order replay with a pool that holds every block of the trace: nothing is
    evicted, so every block seen before is found (the paper's cache ratio's setting)."""
    return replay_in_order(trace, trace.whole_trace_capacity, stop=stop)
